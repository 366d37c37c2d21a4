#!/usr/bin/env python3
"""Planted bugs in the code that decides what is deleted, replaced or trusted.

Each mutant below is one deliberate bug (a check turned off, a comparison that always
passes) in the destructive owner (crates/jobs/src/destructive/, destructive/acts/), the
duplicate acts around it (crates/catalog/src/dupes/resolve/;
temp.rs, which judges whether a temporary's run is alive),
the reader's change check (crates/core/src/read/mod.rs), copy's finish
(crates/jobs/src/copy/content.rs) and tree removal. For each, the script plants it,
builds, runs the tests named beside it, and puts the file back. A mutant is *killed* when
a test fails; one that survives is a safety check no test holds to account.

    sudo python3 ci/mutants.py            # every mutant (about 20 minutes on 2 CPUs)
    sudo python3 ci/mutants.py mount ctime   # those whose name contains a word

Root is required: the tests that kill most mutants make loop filesystems, bind mounts
and FUSE mounts, and a test that skips would let its mutant survive unseen. The results
(and why a mutant that survives is equivalent, where one is) are in docs/faults.md.
It plants each bug in the working tree (and puts the file back, also on an error): run it
in a worktree of its own (`git worktree add`), or build nothing else from this tree while
it runs. Exit status: 0 when every mutant was killed, 1 otherwise.
"""

import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

D_EVIDENCE = "crates/jobs/src/destructive/evidence.rs"
D_TREE = "crates/jobs/src/destructive/tree.rs"
D_DIRECTORY = "crates/jobs/src/destructive/directory.rs"
D_TEMPORARIES = "crates/jobs/src/destructive/temporaries.rs"
D_FORGET = "crates/jobs/src/destructive/forget.rs"
A_CHECK = "crates/jobs/src/destructive/acts/check.rs"
A_ACTS = "crates/jobs/src/destructive/acts/primitives.rs"
R_PREPARE = "crates/catalog/src/dupes/resolve/prepare.rs"
R_CLEAN_UP = "crates/catalog/src/dupes/resolve/clean_up.rs"
R_UNDO = "crates/catalog/src/dupes/resolve/undo.rs"
T = "crates/jobs/src/temp.rs"
C = "crates/jobs/src/copy/content.rs"
READ = "crates/core/src/read/mod.rs"
ROOTS = "crates/catalog/src/index/roots.rs"
DECIDE = "crates/catalog/src/index/decide.rs"
WATCH = "crates/catalog/src/index/watch.rs"
CATCHUP = "crates/catalog/src/index/catchup.rs"

IT = ["--test", "it", "--"]
JOBS = ["-p", "seekless-jobs", "--lib", "--"]
CATALOG = ["-p", "seekless-catalog", "--lib", "--"]
FAULTS = IT + ["faults::seeded"]
ACTS = IT + ["faults_acts"]

# (name, file, text as it is, text with the bug, the tests that must catch it)
MUTANTS = [
    # Tree removal and copy --delete (issue 41 items 1, 2).
    ("mount check always passes (remove_tree, remove_extra)", D_TREE,
     "    if here == mount {", "    if true {",
     [IT + ["copy_delete"], FAULTS]),
    ("remove_extra looks into a mount it meets", D_TREE,
     "            && let Err(e) = on_mount(&dir, &meta, mount, \"nothing deleted under it\")",
     "            && let Err(e) = on_mount(&dir, &meta, Lies::of(&dir, &meta).unwrap_or(mount), \"nothing deleted under it\")",
     [IT + ["copy_delete"]]),
    ("a file in the way of a directory replaced though it is a mount", D_DIRECTORY,
     "                \"not replaced\",\n            ) {",
     "                \"not replaced\",\n            )\n            .and(Err(seekless_core::Error::io(dest, io::Error::other(\"\"))))\n            .or(Ok::<(), seekless_core::Error>(()))\n            {",
     [IT + ["copy_delete"]]),
    ("an empty source empties the backup", D_TREE,
     "    if !empty_source_allowed && is_empty_dir(source) && !is_empty_dir(dest) {",
     "    if false {",
     [IT + ["copy_delete"], FAULTS]),
    ("a file in the way of a directory removed before the directory is there", D_DIRECTORY,
     "    match rename_exchange(&temp, dest) {",
     "    match Err::<(), _>(io::Error::from_raw_os_error(libc::EINVAL)) {",
     [IT + ["copy_delete::a_file_in_the_way"]]),
    # The evidence of a run (issue 41 item 7: "deleting after read errors").
    ("deletes after errors (no clearance withheld)", D_EVIDENCE,
     "        if errors > 0 && !ignore_errors {", "        if false {",
     [FAULTS, IT + ["copy_safety"]]),
    ("nothing shielded under failed paths", D_EVIDENCE,
     "        self.everything\n            || (!self.shielded.is_empty()",
     "        false && self.everything\n            || (!self.shielded.is_empty()",
     [JOBS + ["destructive"], FAULTS]),
    ("a source (or what holds it) removed", D_EVIDENCE,
     "            Some(id) if self.sources.contains(&id) => Some(\"it is a source of this run\"),",
     "            Some(id) if false && self.sources.contains(&id) => Some(\"it is a source of this run\"),",
     [JOBS + ["destructive"], IT + ["copy"]]),
    ("a live temporary removed with a tree", D_TREE,
     "    if path.file_name().is_some_and(is_temp) && !matches!(temp_state(path), TempState::Dead(_)) {",
     "    if false {",
     [JOBS + ["destructive"], FAULTS]),
    ("a live run's temporary taken for dead (the young-file rule)", T,
     "        Ok(()) if just_made_by_a_running_process(path, &file) => TempState::Alive,",
     "        Ok(()) if false => TempState::Alive,",
     [JOBS + ["destructive"]]),
    ("copy backs up a live temporary of another job", T,
     "    path.file_name().is_some_and(is_temp) && !matches!(temp_state(path), TempState::Dead(_))\n}",
     "    false && path.file_name().is_some_and(is_temp)\n}",
     [IT + ["copy_safety::a_live_temporary"]]),
    ("index forgets rows it could not see", D_FORGET,
     "                .filter(|(_, path)| !clearance.shields(path) && absent(path))",
     "                .filter(|(_, path)| absent(path))",
     [JOBS + ["destructive"], FAULTS]),
    ("a replacement removes what it did not confirm", D_TEMPORARIES,
     "                if let Err(why) = confirm(&self.path) {",
     "                if let Err(why) = confirm(&self.path).or(Ok::<(), String>(())) {",
     [JOBS + ["destructive"], IT + ["dupes_act"]]),
    # What is read (issue 41 item 7: the reader's and copy's checks).
    ("the reader's 'unchanged while read' always passes", READ,
     "            Some(how) => Err(Error::new(&*entry.path, ErrorKind::Changed(how))),",
     "            Some(_) => Ok(()),",
     [FAULTS]),
    ("copy puts in place what was not read whole and unchanged", C,
     "        if !intact {", "        if false {",
     [FAULTS]),
    # Volumes by identity and the watch (issue 46).
    ("a vanished mount told by device number only", ROOTS,
     "            (Some(row), Some(here)) => row != here,",
     "            (Some(_), Some(_)) => self.dev != dev,",
     [CATALOG + ["roots"], IT + ["index_volumes"]]),
    ("a place whose volume is unknown taken for the row's own", ROOTS,
     "            (Some(_), None) => true,",
     "            (Some(_), None) => false,",
     [CATALOG + ["roots"]]),
    ("an absent volume not marked offline", ROOTS,
     "            offline.extend(volume);",
     "            offline.extend(volume.filter(|_| false));",
     [CATALOG + ["roots"], IT + ["index_volumes"]]),
    ("a move matched on another volume", DECIDE,
     "            .map(|v| (Fs::Volume(v), rest))",
     "            .map(|_| (Fs::Volume(-1), rest))",
     [IT + ["index_volumes"]]),
    ("a file still being written catalogued by a batch", DECIDE,
     "        if opts.hold.contains(bytes.as_ref()) {",
     "        if false && opts.hold.contains(bytes.as_ref()) {",
     [IT + ["index_watch::every_change"]]),
    ("a batch walks outside the roots", WATCH,
     "            let dir = if root.starts_with(&d) {\n                root.clone()",
     "            let dir = if false {\n                root.clone()",
     [CATALOG + ["watch"]]),
    ("a mount elsewhere taken for one under the roots (a batch over every root)", WATCH,
     "                if mounts == self.mounts {\n                    return false;",
     "                if false {\n                    return false;",
     [CATALOG + ["watch"]]),
    # Catching up without a walk (issue 46 item 3): what a catch-up may skip.
    ("a root recorded though the run did not see it whole", CATCHUP,
     "                walked.iter().all(|d| clearance.sees_whole(d))",
     "                walked.iter().all(|_| true)",
     [CATALOG + ["catchup"], IT + ["index_catchup"]]),
    ("a root recorded with files on another filesystem", CATCHUP,
     "                        .all(|f| f.entry.id.dev == root.dev)",
     "                        .all(|_| true)",
     [CATALOG + ["catchup"]]),
    ("a record of another volume used", CATCHUP,
     ".filter(|r| r.volume == on_btrfs.volume && r.settings == me.settings);",
     ".filter(|r| r.settings == me.settings);",
     [IT + ["index_catchup::another"]]),
    ("a record of other settings used", CATCHUP,
     ".filter(|r| r.volume == on_btrfs.volume && r.settings == me.settings);",
     ".filter(|r| r.volume == on_btrfs.volume);",
     [IT + ["index_catchup::what"]]),
    ("a nested subvolume caught up", CATCHUP,
     "    if changes.subvolumes.iter().any(|s| s.starts_with(root)) {",
     "    if false {",
     [IT + ["index_catchup::what"]]),
    ("a filesystem mounted under the root caught up", CATCHUP,
     "    if !seekless_sys::mount_points_under(root).ok()?.is_empty() {",
     "    if false {",
     [IT + ["index_catchup::what"]]),
    ("a root caught up with --follow", CATCHUP,
     "!opts.full_walk && !opts.rehash && !opts.prune && !plan_opts.walk.follow;",
     "!opts.full_walk && !opts.rehash && !opts.prune;",
     [IT + ["index_catchup::what"]]),
    ("a stale record kept", CATCHUP,
     "            .filter(|r| {\n                let r = path_from_bytes(r);",
     "            .filter(|_| false)\n            .filter(|r| {\n                let r = path_from_bytes(r);",
     [CATALOG + ["catchup"], IT + ["index_catchup::what"]]),
    ("a file written since not read again", CATCHUP,
     "                me.reread.extend(files);",
     "                let _ = files;",
     [IT + ["index_catchup::a_run"]]),
    ("a record kept until the run ends", "crates/catalog/src/index/mod.rs",
     "    catalog.drop_catchup(&catchup.stale(), &waiting)?;",
     "    let _ = catchup.stale();",
     [IT + ["index_catchup::a_catch_up_killed"]]),
    ("a row whose read failed not retried by a catch-up", CATCHUP,
     "        .chain(unread)",
     "        .chain(&[] as &[PathBuf])",
     [IT + ["index_catchup::what"]]),
    # The duplicate acts (issue 41 items 3-6).
    ("the act's last look at the file always passes", A_CHECK,
     "        still(&self.file, self.file_ctime).map_err(io::Error::other)?;",
     "        let _ = still(&self.file, self.file_ctime);",
     [ACTS, IT + ["dupes_act"]]),
    ("the act's last look at the keeper always passes", A_CHECK,
     "        self.keeper_still(keeper_ctime).map_err(|why| {",
     "        Ok::<(), String>(()).map_err(|why| {",
     [ACTS, IT + ["dupes_act"]]),
    ("the status-change time is not compared", A_CHECK,
     "        None if now_ctime == ctime => Ok(now),",
     "        None if now_ctime == ctime || true => Ok(now),",
     [ACTS, IT + ["dupes_act"]]),
    ("a change while the check read is not seen", A_CHECK,
     "        if before.get(&k.path) != Some(&ctime) {",
     "        if false {",
     [IT + ["dupes_act::an_edit"]]),
    ("an exact duplicate need not read as its keeper", A_CHECK,
     "            if c.identical && file.blake3 != keeper.blake3 {",
     "            if false {",
     [CATALOG + ["resolve"], IT + ["dupes_act"]]),
    ("a file similar but not identical is replaced", R_PREPARE,
     "    if !checked.identical() && !act.keeps_the_bytes() {",
     "    if false {",
     [CATALOG + ["resolve"], IT + ["dupes"]]),
    ("hard links whatever the metadata", R_PREPARE,
     "            if !metadata_may_differ && let Some(what) = metadata_differs(path, checked.keeper()) {",
     "            if false && let Some(what) = metadata_differs(path, checked.keeper()) {",
     [ACTS, IT + ["dupes_act"]]),
    ("a move or trash never confirms what it took", A_ACTS,
     "    let Err(why) = is_the_file(to, file) else {",
     "    let Err(why) = Ok::<(), String>(()) else {",
     [ACTS, IT + ["dupes_act"]]),
    ("a hard link never confirms what it replaced", A_ACTS,
     "    let replaced = temp.replace_confirmed(Durable::no_data(), |at| is_the_file(at, c.known_file()));",
     "    let replaced = temp.replace_confirmed(Durable::no_data(), |_| Ok(()));",
     [ACTS, IT + ["dupes_act"]]),
    ("a moved file recognised by identity only (no content fallback)", A_CHECK,
     "            if !k.blake3.is_empty() && content_hash(at).as_deref() == Some(&k.blake3) =>",
     "            if false =>",
     [ACTS, IT + ["dupes_act"]]),
    ("cleaning up a killed run removes anything under a temporary's name", A_ACTS,
     "    Err(\n        \"left: a temporary name of a killed",
     "    if true {\n        return Ok(true);\n    }\n    Err(\n        \"left: a temporary name of a killed",
     [ACTS, IT + ["dupes_act"]]),
    ("cleaning up a killed run removes a name that is not its temporary's", A_ACTS,
     "        Ok(true) if !ours => Leftover::Kept(format!(",
     "        Ok(true) if false => Leftover::Kept(format!(",
     [JOBS + ["a_leftover_link"]]),
    ("cleaning up a killed run removes nothing", A_ACTS,
     "    if is(keeper) && links > 1 {",
     "    if false {",
     [ACTS, IT + ["dupes_act"]]),
    ("undo follows the way back as it finds it (no folder held)", R_UNDO,
     "        let back = match os::pinned_no_links(&from) {",
     "        let back = match Ok::<_, io::Error>(from.clone()) {",
     [IT + ["dupes_act::undo_holds"]]),
    ("undo never confirms what it put back", A_ACTS,
     "    if let Err(why) = is_the_file(back, expect) {",
     "        if let Err(why) = Ok::<(), String>(()) {",
     [IT + ["dupes_act::undo_confirms"]]),
    ("a journal whose run lives is taken for a dead run's", R_CLEAN_UP,
     "        Err(fs::TryLockError::WouldBlock) => Err(Error::io(",
     "        Err(fs::TryLockError::WouldBlock) => Ok(Some(file)),\n        #[allow(unreachable_code)]\n        Err(fs::TryLockError::WouldBlock) => Err(Error::io(",
     [ACTS, IT + ["dupes_act"]]),
]


def cargo(args, log):
    env = dict(os.environ)
    env["SEEKLESS_REQUIRE_ROOT_TESTS"] = "1"
    env.pop("SEEKLESS_ALLOW_SKIP", None)
    return subprocess.run(["cargo"] + args, cwd=ROOT, env=env, stdout=log,
                          stderr=subprocess.STDOUT).returncode


def main():
    if os.geteuid() != 0:
        print("mutants: needs root (loop devices, bind mounts, FUSE): sudo python3 ci/mutants.py",
              file=sys.stderr)
        return 2
    words = sys.argv[1:]
    chosen = [m for m in MUTANTS if not words or any(w in m[0] for w in words)]
    for name, rel, find, *_ in chosen:
        if open(os.path.join(ROOT, rel)).read().count(find) != 1:
            print(f"mutants: {rel}: the text of '{name}' is not there once: update ci/mutants.py",
                  file=sys.stderr)
            return 2
    os.makedirs(os.path.join(ROOT, "target"), exist_ok=True)
    log_path = os.path.join(ROOT, "target", "mutants.log")
    survived, results = [], []
    with open(log_path, "w") as log:
        for name, rel, find, bug, tests, *equivalent in chosen:
            path = os.path.join(ROOT, rel)
            text = open(path).read()
            if text.count(find) != 1:
                print(f"mutants: {rel}: the text of '{name}' is not there once: update ci/mutants.py",
                      file=sys.stderr)
                return 2
            start = time.time()
            try:
                open(path, "w").write(text.replace(find, bug, 1))
                log.write(f"\n===== {name}\n")
                log.flush()
                if cargo(["test", "--workspace", "--no-run", "-q"], log) != 0:
                    verdict = "unviable"
                else:
                    verdict = "SURVIVED"
                    for t in tests:
                        log.write(f"----- cargo test {' '.join(t)}\n")
                        log.flush()
                        if cargo(["test", "-q"] + t, log) != 0:
                            verdict = "killed by " + " ".join(t[-1:])
                            break
            finally:
                open(path, "w").write(text)
            secs = time.time() - start
            if verdict == "SURVIVED" and equivalent:
                verdict = "survived (" + equivalent[0].split(":")[0] + ")"
            results.append((name, verdict))
            print(f"{verdict:<40} {secs:5.0f} s  {name}", flush=True)
            if verdict in ("SURVIVED", "unviable"):
                survived.append(name)
    killed = sum(1 for _, v in results if v.startswith("killed"))
    equivalent = sum(1 for _, v in results if v.startswith("survived ("))
    print(f"mutants: {killed} of {len(results)} killed, {equivalent} equivalent, "
          f"{len(survived)} not caught; log: {log_path}")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
