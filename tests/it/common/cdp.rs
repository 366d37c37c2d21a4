//! Headless Chromium driven over the DevTools protocol (CDP) through
//! `--remote-debugging-pipe`: Chromium reads JSON messages, each ended by a NUL byte, on
//! its fd 3 and writes its answers and events the same way on fd 4. No port, no
//! WebSocket, nothing another process could reach.
//!
//! ```ignore
//! let mut browser = Browser::launch(&dir.join("profile"), (1280, 2000));
//! let tab = browser.open(&format!("file://{}", page.display()));
//! browser.wait_for(&tab, "document.body.dataset.page === '1'", "the first page");
//! browser.click(&tab, "section[data-group='0'] figure[data-member='1']");
//! ```
//!
//! Every wait is bounded ([`TIMEOUT`]) and fails with what it waited for.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The longest any one wait may take.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// A headless Chromium of its own (own profile, no network), closed when dropped.
pub struct Browser {
    child: Child,
    to: File,
    from: Receiver<Value>,
    next_id: u64,
    /// Events received while waiting for something else, oldest first.
    events: Vec<Value>,
    log: PathBuf,
}

/// A page (target) the browser has open, attached in flat mode.
pub struct Tab {
    pub session: String,
}

/// A pipe, both ends closed on exec.
fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: fds is an array of two ints, as pipe2 wants.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: pipe2 succeeded: both descriptors are open and owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

impl Browser {
    /// Starts Chromium with the profile `profile` (created) and a window of `size`
    /// (width, height in CSS pixels). Its stderr goes to `PROFILE.log` beside it.
    pub fn launch(profile: &Path, size: (u32, u32)) -> Browser {
        std::fs::create_dir_all(profile).unwrap();
        let log = profile.with_extension("log");
        let (to_read, to_write) = pipe();
        let (from_read, from_write) = pipe();
        let (r, w) = (to_read.as_raw_fd(), from_write.as_raw_fd());
        let mut cmd = Command::new("chromium");
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--remote-debugging-pipe",
        ])
        .arg(format!("--window-size={},{}", size.0, size.1))
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(&log).unwrap());
        // SAFETY: between fork and exec only async-signal-safe calls (fcntl, dup2) on
        // descriptors this process owns; copies above 10 first, so that neither target
        // (3, 4) overwrites the other's source, and dup2 leaves the targets open on exec.
        unsafe {
            cmd.pre_exec(move || {
                let r = libc::fcntl(r, libc::F_DUPFD_CLOEXEC, 10);
                let w = libc::fcntl(w, libc::F_DUPFD_CLOEXEC, 10);
                if r < 0 || w < 0 || libc::dup2(r, 3) < 0 || libc::dup2(w, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start chromium: {e}"));
        drop((to_read, from_write));
        let (tx, rx) = channel();
        let reader = File::from(from_read);
        std::thread::spawn(move || {
            let mut reader = BufReader::new(reader);
            let mut message = Vec::new();
            loop {
                message.clear();
                match reader.read_until(0, &mut message) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                if message.last() == Some(&0) {
                    message.pop();
                }
                // A message that is not JSON ends the reader: the test waiting on it then
                // fails at once (the channel is closed), naming no timeout it did not wait.
                let value = match serde_json::from_slice::<Value>(&message) {
                    Ok(value) => value,
                    Err(e) => panic!(
                        "Chromium sent what is not JSON ({e}): {}",
                        String::from_utf8_lossy(&message)
                    ),
                };
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        Browser {
            child,
            to: File::from(to_write),
            from: rx,
            next_id: 1,
            events: Vec::new(),
            log,
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read(&self.log).unwrap_or_default();
        let start = text.len().saturating_sub(2000);
        String::from_utf8_lossy(&text[start..]).into_owned()
    }

    /// Sends `method` (to the page of `session`, or to the browser) and waits for its
    /// result; an error answer fails the test.
    pub fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            message["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.to
            .write_all(&bytes)
            .unwrap_or_else(|e| panic!("{method}: cannot write to chromium: {e}"));
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let m = self.receive(deadline, method);
            if m.get("id").and_then(Value::as_u64) == Some(id) {
                if let Some(e) = m.get("error") {
                    panic!("{method} {params}: {e}");
                }
                return m["result"].clone();
            }
            self.events.push(m);
        }
    }

    fn receive(&mut self, deadline: Instant, what: &str) -> Value {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.from.recv_timeout(left) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => {
                panic!(
                    "chromium: no {what} within {TIMEOUT:?}\n{}",
                    self.log_tail()
                )
            }
            Err(RecvTimeoutError::Disconnected) => {
                panic!("chromium went away waiting for {what}\n{}", self.log_tail())
            }
        }
    }

    /// Waits for the event `method` (of the page of `session`, or of the browser) for which
    /// `matches` holds (one received earlier included), and takes it.
    pub fn wait_event(
        &mut self,
        session: Option<&str>,
        method: &str,
        matches: impl Fn(&Value) -> bool,
    ) -> Value {
        let found = |m: &Value| {
            m["method"] == method && m["sessionId"].as_str() == session && matches(&m["params"])
        };
        if let Some(at) = self.events.iter().position(found) {
            return self.events.remove(at)["params"].clone();
        }
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let m = self.receive(deadline, method);
            if found(&m) {
                return m["params"].clone();
            }
            self.events.push(m);
        }
    }

    /// Opens `url` in a new page, attached, its `Page` and `Runtime` domains enabled, and
    /// waits for its load event.
    pub fn open(&mut self, url: &str) -> Tab {
        let target = self.call(None, "Target.createTarget", json!({"url": "about:blank"}));
        let target = target["targetId"].as_str().unwrap().to_string();
        let attached = self.call(
            None,
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        );
        let tab = Tab {
            session: attached["sessionId"].as_str().unwrap().to_string(),
        };
        self.call(Some(&tab.session), "Page.enable", json!({}));
        self.call(Some(&tab.session), "Runtime.enable", json!({}));
        self.navigate(&tab, url);
        tab
    }

    /// Loads `url` in `tab` and waits for its load event.
    pub fn navigate(&mut self, tab: &Tab, url: &str) {
        self.events.retain(|m| m["method"] != "Page.loadEventFired");
        let r = self.call(Some(&tab.session), "Page.navigate", json!({"url": url}));
        assert!(r.get("errorText").is_none(), "navigating to {url}: {r}");
        let session = tab.session.clone();
        self.wait_event(Some(&session), "Page.loadEventFired", |_| true);
    }

    /// The value of the JavaScript expression `expr` in `tab` (promises awaited); an
    /// exception fails the test.
    pub fn eval(&mut self, tab: &Tab, expr: &str) -> Value {
        let r = self.call(
            Some(&tab.session),
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(e) = r.get("exceptionDetails") {
            panic!("{expr}: {e}");
        }
        r["result"]["value"].clone()
    }

    /// Polls `expr` in `tab` until it is true, for at most [`TIMEOUT`]; fails naming
    /// `what` otherwise.
    pub fn wait_for(&mut self, tab: &Tab, expr: &str, what: &str) {
        let deadline = Instant::now() + TIMEOUT;
        while self.eval(tab, expr) != json!(true) {
            assert!(
                Instant::now() < deadline,
                "{what}: `{expr}` still false after {TIMEOUT:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Clicks, as a user does (mouse pressed and released), the middle of the first
    /// element matching the CSS `selector`, scrolled into view first.
    pub fn click(&mut self, tab: &Tab, selector: &str) {
        let sel = serde_json::to_string(selector).unwrap();
        let at = self.eval(
            tab,
            &format!(
                "(() => {{ const e = document.querySelector({sel}); if (!e) return null; \
                 e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); \
                 return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
            ),
        );
        let (Some(x), Some(y)) = (at[0].as_f64(), at[1].as_f64()) else {
            panic!("nothing on the page matches {selector}");
        };
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                Some(&tab.session),
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }

    /// Lets downloads go into `dir` (under the name the page gives), with progress events.
    pub fn allow_downloads(&mut self, dir: &Path) {
        self.call(
            None,
            "Browser.setDownloadBehavior",
            json!({"behavior": "allow", "downloadPath": dir, "eventsEnabled": true}),
        );
    }

    /// Waits for a download to begin and complete; returns its file in `dir`.
    pub fn downloaded(&mut self, dir: &Path) -> PathBuf {
        let begun = self.wait_event(None, "Browser.downloadWillBegin", |_| true);
        let guid = begun["guid"].clone();
        let done = self.wait_event(None, "Browser.downloadProgress", |p| {
            p["guid"] == guid && p["state"] != "inProgress"
        });
        assert_eq!(done["state"], "completed", "download: {done}");
        dir.join(begun["suggestedFilename"].as_str().unwrap())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Closed politely (its helpers go with it); killed if it does not go in time.
        let close = b"{\"id\":0,\"method\":\"Browser.close\"}\0";
        let _ = self.to.write_all(close);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
