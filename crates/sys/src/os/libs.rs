//! What a program that loads a shared library or runs another program at run time needs
//! to know of the platform: the files' names, and whether loading can work at all.

/// The file names a shared library `name` of major version `major` goes by, most specific
/// first, for the loader to try in turn: `libNAME.so.MAJOR`, `libNAME.so` (Linux and other
/// Unix systems); `libNAME.MAJOR.dylib`, `libNAME.dylib` (macOS); `libNAME.dll`,
/// `NAME.dll` (Windows, where builds name it either way).
///
/// ```
/// let names = seekless_sys::shared_library_names("heif", 1);
/// assert_eq!(names.len(), 2);
/// assert!(names.iter().all(|n| n.contains("heif")));
/// ```
pub fn shared_library_names(name: &str, major: u32) -> Vec<String> {
    if cfg!(target_os = "macos") {
        vec![
            format!("lib{name}.{major}.dylib"),
            format!("lib{name}.dylib"),
        ]
    } else if cfg!(windows) {
        vec![format!("lib{name}.dll"), format!("{name}.dll")]
    } else {
        vec![format!("lib{name}.so.{major}"), format!("lib{name}.so")]
    }
}

/// Whether this program can load a shared library at run time. A Unix program linked
/// statically with its C library (`crt-static`, as the static release binary is) cannot,
/// reliably: the library would bring a second C library beside the one linked in (and
/// musl's `dlopen` always fails).
pub fn can_load_shared_libraries() -> bool {
    !cfg!(all(unix, target_feature = "crt-static"))
}

/// The file name of the program `name` as found on `PATH`: `NAME.exe` on Windows, `NAME`
/// elsewhere.
///
/// ```
/// assert!(seekless_sys::executable_name("ffmpeg").starts_with("ffmpeg"));
/// ```
pub fn executable_name(name: &str) -> String {
    format!("{name}{}", std::env::consts::EXE_SUFFIX)
}
