//! The contact sheet as a review tool (`seekless dupes --html`), driven in headless
//! Chromium over the DevTools protocol (`common::cdp`): decisions clicked on the page and
//! saved are exactly the decisions file `dupes --apply` reads; what the catalog holds
//! (file names, EXIF) is shown as text, never run, and the page's policy blocks what a
//! page could be made to run.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::*;
use crate::dupes::{catalog, dupes, python};

/// A file name and an EXIF make that would run script if the page put them in as HTML.
const NAME_INJECTION: &str = "e <img src=x onerror=window.pwned=1>.jpg";
const MAKE_INJECTION: &str = "</script><script>window.pwned=2</script>";

#[test]
fn contact_sheet_saves_the_decisions_made_on_it() {
    let test = "contact_sheet_saves_the_decisions_made_on_it";
    let Some(python) = python(test) else { return };
    if !require_tool(test, "chromium") {
        return;
    }
    let dir = scratch_dir(test);
    let (photos, db) = catalog(python, dir.path(), true);
    // A copy of e.jpg under a name and with a make that are HTML: a similar group with
    // e.jpg (same pixels, other bytes).
    let injected = photos.join(NAME_INJECTION);
    std::fs::copy(photos.join("e.jpg"), &injected).unwrap();
    run(Command::new("exiftool")
        .args(["-q", "-overwrite_original"])
        .arg(format!("-Make={MAKE_INJECTION}"))
        .arg(&injected));
    let o = crate::common::catalog::index(&db, &["--thumbs".as_ref(), photos.as_os_str()]);
    assert_exit(&o, 0);

    let sheet = dir.path().join("sheet.html");
    let o = dupes(&db, &["--html", sheet.to_str().unwrap(), "--json"]);
    assert_exit(&o, 0);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let groups = doc["groups"].as_array().unwrap();
    // The groups, as the page orders them (as --json does), by one file's name.
    let group_of = |name: &str| {
        let path = photos.join(name);
        groups
            .iter()
            .position(|g| {
                g["members"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| m["path"] == path.to_str().unwrap())
            })
            .unwrap_or_else(|| panic!("no group has {name}"))
    };
    let member_of = |g: usize, name: &str| {
        let path = photos.join(name);
        groups[g]["members"]
            .as_array()
            .unwrap()
            .iter()
            .position(|m| m["path"] == path.to_str().unwrap())
            .unwrap()
    };
    let blake3 = |g: usize, m: usize| groups[g]["members"][m]["blake3"].clone();
    let contents = |g: usize| {
        let mut all: Vec<String> = groups[g]["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["blake3"].as_str().unwrap().to_string())
            .collect();
        all.sort();
        all.dedup();
        json!(all)
    };
    let (a, b, c, e) = (
        group_of("a.jpg"),
        group_of("b.png"),
        group_of("c.jpg"),
        group_of("e.jpg"),
    );
    assert_eq!(groups[a]["kind"], "exact");
    for g in [b, c, e] {
        assert_eq!(groups[g]["kind"], "similar", "{}", groups[g]);
    }
    assert_eq!(member_of(e, NAME_INJECTION) + member_of(e, "e.jpg"), 1);
    let half = member_of(c, "c-half.jpg");
    let first = member_of(c, "c.jpg");
    assert!(
        !groups[c]["members"][half]["keeper"].as_bool().unwrap(),
        "c-half.jpg is not the suggested keeper"
    );

    let downloads = dir.path().join("downloads");
    std::fs::create_dir_all(&downloads).unwrap();
    let mut browser = cdp::Browser::launch(&dir.path().join("profile"), (1280, 1000));
    browser.allow_downloads(&downloads);
    let tab = browser.open(&format!("file://{}", sheet.display()));
    browser.wait_for(
        &tab,
        "document.body.dataset.page === '1'",
        "first page shown",
    );

    // The injected name and make are on the page as text, and nothing of them ran.
    let text = browser.eval(
        &tab,
        &format!(
            "[document.body.textContent.includes({name}), \
              document.body.textContent.includes({make}), \
              typeof window.pwned, document.querySelectorAll('section').length, \
              document.body.dataset.thumbsLoaded === document.body.dataset.thumbsShown]",
            name = json!(injected.to_str().unwrap()),
            make = json!(MAKE_INJECTION),
        ),
    );
    assert_eq!(text, json!([true, true, "undefined", groups.len(), true]));
    // The policy is in force: an inline handler put in by a script does not run either
    // (the browser reports the violation instead).
    let blocked = browser.eval(
        &tab,
        "new Promise(done => { \
           document.addEventListener('securitypolicyviolation', \
             ev => done(ev.effectiveDirective), {once: true}); \
           const d = document.createElement('div'); \
           d.innerHTML = '<img src=\"data:,\" onerror=\"window.pwned = 3\">'; \
           document.body.append(d); })",
    );
    assert_eq!(blocked, json!("script-src-attr"));
    assert_eq!(
        browser.eval(&tab, "typeof window.pwned"),
        json!("undefined")
    );

    // One keeper shown per duplicate group (what is hidden is not displayed: an element's
    // own `display` would otherwise win over `hidden`).
    let shown_marks = browser.eval(
        &tab,
        "[...document.querySelectorAll('figure .mark')]\
           .filter(e => getComputedStyle(e).display !== 'none').length",
    );
    let duplicate_groups = groups
        .iter()
        .filter(|g| g["kind"] == "exact" || g["kind"] == "similar")
        .count();
    assert_eq!(shown_marks, json!(duplicate_groups));

    // The decisions, clicked as a user clicks.
    let group = |g: usize| format!("section[data-group='{g}']");
    browser.click(&tab, &format!("{} button.keep-all", group(a)));
    browser.click(&tab, &format!("{} button.not-duplicates", group(b)));
    browser.click(&tab, &format!("{} figure[data-member='{half}']", group(c)));
    browser.click(
        &tab,
        &format!("{} figure[data-member='{first}'] button.apart", group(c)),
    );
    // Undone: leaves nothing.
    browser.click(&tab, &format!("{} button.keep-all", group(e)));
    browser.click(&tab, &format!("{} button.undo", group(e)));
    let marked = browser.eval(
        &tab,
        &format!(
            "[document.querySelector(\"{} figure[data-member='{half}']\").classList.contains('keeper'), \
              document.querySelectorAll('section.decided').length, \
              document.querySelector('nav .decided').textContent]",
            group(c)
        ),
    );
    assert_eq!(marked, json!([true, 3, "4 decisions"]));
    browser.click(&tab, "nav button.save");
    let saved = browser.downloaded(&downloads);
    drop(browser);

    let text = std::fs::read_to_string(&saved).unwrap();
    assert!(
        text.starts_with("{\n  \"seekless_decisions\": 1,\n  \"db\": "),
        "{text}"
    );
    let got: Value = serde_json::from_str(&text).unwrap();
    let mut pair = vec![blake3(c, half), blake3(c, first)];
    pair.sort_by(|x, y| x.as_str().cmp(&y.as_str()));
    let mut decisions = vec![
        (a, json!({"decision": "keep-all", "contents": contents(a)})),
        (
            b,
            json!({"decision": "not-duplicates", "contents": contents(b)}),
        ),
        (
            c,
            json!({"decision": "keeper", "contents": contents(c), "keeper": blake3(c, half),
                   "path": photos.join("c-half.jpg").to_str().unwrap()}),
        ),
    ];
    decisions.sort_by_key(|(g, _)| *g);
    let mut decisions: Vec<Value> = decisions.into_iter().map(|(_, d)| d).collect();
    let at = decisions
        .iter()
        .position(|d| d["decision"] == "keeper")
        .unwrap();
    decisions.insert(
        at + 1,
        json!({"decision": "not-duplicates", "contents": pair}),
    );
    let want = json!({
        "seekless_decisions": 1,
        "db": db.to_str().unwrap(),
        "decisions": decisions,
    });
    assert_eq!(got, want, "the saved decisions");

    apply_records_the_decisions(&db, &saved, &want);
}

/// `seekless dupes --apply FILE` records the saved decisions (`--decisions --json` lists
/// each, its contents, keeper and path), and they give the catalog and the files the state
/// the page showed: the kept-all group and the pair marked apart are no longer groups,
/// the chosen keeper is kept, and `--act move` moves exactly the files left offered.
fn apply_records_the_decisions(db: &Path, saved: &Path, want: &Value) {
    let o = dupes(db, &["--apply", saved.to_str().unwrap()]);
    assert_exit(&o, 0);
    let o = dupes(db, &["--decisions", "--json"]);
    assert_exit(&o, 0);
    let listed: Value = serde_json::from_slice(&o.stdout).unwrap();
    let listed = listed["decisions"].as_array().unwrap();
    let wanted = want["decisions"].as_array().unwrap();
    assert_eq!(listed.len(), wanted.len(), "{listed:?}");
    for d in wanted {
        let found = listed
            .iter()
            .find(|l| l["contents"] == d["contents"] && l["decision"] == d["decision"])
            .unwrap_or_else(|| panic!("{d} not recorded: {listed:?}"));
        assert_eq!(found["decision"], d["decision"], "{found}");
        if d["decision"] == "keeper" {
            assert_eq!(found["keeper"], d["keeper"]);
            assert_eq!(found["path"], d["path"]);
        }
        assert!(found["id"].as_i64().is_some() && found["made"].is_string());
    }

    // The groups now.
    let o = dupes(db, &["--json"]);
    assert_exit(&o, 0);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let name = |m: &Value| {
        Path::new(m["path"].as_str().unwrap())
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    let groups: Vec<(String, Vec<(String, bool)>)> = doc["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["kind"] == "exact" || g["kind"] == "similar")
        .map(|g| {
            let mut m: Vec<(String, bool)> = g["members"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| (name(m), m["keeper"].as_bool().unwrap()))
                .collect();
            m.sort();
            (g["kind"].as_str().unwrap().to_string(), m)
        })
        .collect();
    let in_a_group = |file: &str| groups.iter().any(|(_, m)| m.iter().any(|(n, _)| n == file));
    // Kept all: a's copies; not duplicates: b's pair, and c-half apart from c.
    for file in ["a.jpg", "a-copy.jpg", "b.png", "b-q60.jpg", "c-half.jpg"] {
        assert!(!in_a_group(file), "{file} is still in a group: {groups:?}");
    }
    // c and its byte-identical copy are still duplicates (bytes are bytes).
    assert!(
        groups.contains(&(
            "exact".into(),
            vec![("c-copy.jpg".into(), false), ("c.jpg".into(), true)]
        )),
        "{groups:?}"
    );
    assert_eq!(doc["decided"], 1, "the kept-all group");

    // Acting on them (similar files too) moves exactly what is left offered.
    let offered = dupes(db, &["-0"]);
    let offered: Vec<PathBuf> = offered
        .stdout
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
        .collect();
    assert!(
        offered.iter().any(|p| p.ends_with("c-copy.jpg")),
        "{offered:?}"
    );
    let moved = db.with_extension("moved");
    let o = dupes(
        db,
        &[
            "--act",
            "move",
            "--include-similar",
            "--to",
            moved.to_str().unwrap(),
            "--journal",
            db.with_extension("journal").to_str().unwrap(),
        ],
    );
    assert_exit(&o, 0);
    for p in &offered {
        assert!(!p.exists(), "{} not moved", p.display());
        assert!(moved.join(p.strip_prefix("/").unwrap()).is_file());
    }
    for kept in ["a-copy.jpg", "c-half.jpg", "b-q60.jpg", "c.jpg"] {
        let p = Path::new(
            want["decisions"]
                .as_array()
                .unwrap()
                .iter()
                .find_map(|d| d["path"].as_str())
                .unwrap(),
        )
        .with_file_name(kept);
        assert!(p.exists(), "{} was moved", p.display());
    }
}

/// A sheet of more groups than a page holds: each page shows its own groups, in the order
/// `--json` lists them, the last page the rest.
#[test]
fn each_page_of_the_sheet_shows_its_own_groups() {
    let test = "each_page_of_the_sheet_shows_its_own_groups";
    if !require_tools(test, &["chromium", "convert"]) {
        return;
    }
    let dir = scratch_dir(test);
    let photos = dir.path().join("photos");
    std::fs::create_dir_all(photos.join("copy")).unwrap();
    // 30 exact groups (one picture and its copy each), more than a page of 25.
    for i in 0..30 {
        let name = format!("p{i:02}.png");
        run(Command::new("convert")
            .args([
                "-size",
                "16x12",
                &format!("xc:rgb({},{},{})", i * 8, 255 - i * 8, i),
            ])
            .arg(photos.join(&name)));
        std::fs::copy(photos.join(&name), photos.join("copy").join(&name)).unwrap();
    }
    let db = dir.path().join("photos.db");
    let o = crate::common::catalog::index(&db, &["--thumbs".as_ref(), photos.as_os_str()]);
    assert_exit(&o, 0);
    let sheet = dir.path().join("sheet.html");
    let o = dupes(
        &db,
        &[
            "--html",
            sheet.to_str().unwrap(),
            "--similar",
            "0",
            "--json",
        ],
    );
    assert_exit(&o, 0);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let keepers: Vec<String> = doc["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["members"][0]["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(keepers.len(), 30);

    let mut browser = cdp::Browser::launch(&dir.path().join("profile"), (1280, 1000));
    let tab = browser.open(&format!("file://{}", sheet.display()));
    let shown = |browser: &mut cdp::Browser, page: &str| {
        browser.wait_for(
            &tab,
            &format!("document.body.dataset.page === '{page}'"),
            "page shown",
        );
        browser.eval(
            &tab,
            "[...document.querySelectorAll('section figure:first-of-type .path')].map(e => e.textContent)",
        )
    };
    assert_eq!(shown(&mut browser, "1"), json!(keepers[..25]));
    browser.click(&tab, "nav#pager button[data-action=next]");
    assert_eq!(shown(&mut browser, "2"), json!(keepers[25..]));
}
