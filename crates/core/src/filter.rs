//! Which files found inside directories are kept: by extension and by glob.

use std::ffi::OsStr;
use std::path::Path;

use globset::{Glob, GlobSet, GlobSetBuilder};

/// A filter on file names. Files named directly as inputs are always kept: the filter
/// selects among what directories contain.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Lower-case extensions without the dot; empty = any.
    extensions: Vec<String>,
    /// Globs matched against the file name.
    name_globs: Option<GlobSet>,
    /// Globs (containing `/`) matched against the whole path.
    path_globs: Option<GlobSet>,
    /// The globs as given, for [`describe`](Self::describe).
    glob_texts: Vec<String>,
}

impl Filter {
    /// Keeps everything.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps only files with one of these extensions (case-insensitive, with or without
    /// the dot). May be called repeatedly; the lists add up.
    pub fn extensions<I, S>(mut self, exts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        for e in exts {
            let e = e
                .as_ref()
                .trim()
                .trim_start_matches('.')
                .to_ascii_lowercase();
            if !e.is_empty() {
                self.extensions.push(e);
            }
        }
        self
    }

    /// Also keeps files with the extension `ext` when the filter keeps only some
    /// extensions (a filter that keeps any extension is left as it is); its globs still
    /// apply. `index` widens its filter so to see the XMP sidecars beside its images.
    pub fn also_extension(self, ext: &str) -> Self {
        if self.extensions.is_empty() {
            self
        } else {
            self.extensions([ext])
        }
    }

    /// Keeps only files matching one of these globs. A glob without `/` is matched against
    /// the file name (`*.jpg`), one with `/` against the whole path (`**/DCIM/**`).
    pub fn globs<I, S>(mut self, globs: I) -> Result<Self, globset::Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut names = GlobSetBuilder::new();
        let mut paths = GlobSetBuilder::new();
        let (mut n, mut p) = (0, 0);
        for g in globs {
            let g = g.as_ref();
            let glob = Glob::new(g)?;
            self.glob_texts.push(g.to_string());
            if g.contains('/') {
                paths.add(glob);
                p += 1;
            } else {
                names.add(glob);
                n += 1;
            }
        }
        if n > 0 {
            self.name_globs = Some(names.build()?);
        }
        if p > 0 {
            self.path_globs = Some(paths.build()?);
        }
        Ok(self)
    }

    /// Whether the filter keeps everything.
    pub fn is_empty(&self) -> bool {
        self.extensions.is_empty() && self.name_globs.is_none() && self.path_globs.is_none()
    }

    /// What the filter keeps, as one stable line (the extensions and globs, each sorted):
    /// the same for two filters that keep the same names, whatever order they were given
    /// in. A catalog stores it to know a later run asks for the same files.
    pub fn describe(&self) -> String {
        let mut exts = self.extensions.clone();
        exts.sort();
        exts.dedup();
        let mut globs = self.glob_texts.clone();
        globs.sort();
        globs.dedup();
        format!("extensions {exts:?} globs {globs:?}")
    }

    /// Whether a file at `path` named `name` is kept.
    pub fn keeps(&self, path: &Path, name: &OsStr) -> bool {
        if !self.extensions.is_empty() {
            let ext = Path::new(name)
                .extension()
                .map(|e| e.to_string_lossy().to_ascii_lowercase());
            match ext {
                Some(ext) if self.extensions.contains(&ext) => {}
                _ => return false,
            }
        }
        let by_name = self.name_globs.as_ref().map(|g| g.is_match(name));
        let by_path = self.path_globs.as_ref().map(|g| g.is_match(path));
        match (by_name, by_path) {
            (None, None) => true,
            (a, b) => a.unwrap_or(false) || b.unwrap_or(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keeps(f: &Filter, p: &str) -> bool {
        let path = Path::new(p);
        f.keeps(path, path.file_name().unwrap())
    }

    #[test]
    fn extensions_match_case_insensitively_with_or_without_dot() {
        let f = Filter::new().extensions(["jpg", ".PNG"]);
        assert!(keeps(&f, "/a/IMG_1.JPG"));
        assert!(keeps(&f, "/a/b.png"));
        assert!(!keeps(&f, "/a/b.jpeg"));
        assert!(!keeps(&f, "/a/jpg"));
    }

    #[test]
    fn globs_without_slash_match_names_and_with_slash_match_paths() {
        let f = Filter::new().globs(["IMG_*", "**/keep/**"]).unwrap();
        assert!(keeps(&f, "/x/IMG_0001.JPG"));
        assert!(keeps(&f, "/x/keep/other.txt"));
        assert!(!keeps(&f, "/x/other.txt"));
    }

    #[test]
    fn a_widened_filter_adds_an_extension_only_to_a_list_and_keeps_its_globs() {
        let f = Filter::new().extensions(["jpg"]).also_extension("xmp");
        assert!(keeps(&f, "/a/b.JPG.XMP") && keeps(&f, "/a/b.jpg"));
        assert!(!keeps(&f, "/a/b.png"));
        let any = Filter::new().also_extension("xmp");
        assert!(any.is_empty() && keeps(&any, "/a/b.png"));
        let globbed = Filter::new()
            .globs(["**/keep/**"])
            .unwrap()
            .extensions(["jpg"])
            .also_extension("xmp");
        assert!(keeps(&globbed, "/x/keep/b.xmp"));
        assert!(!keeps(&globbed, "/x/other/b.xmp"));
    }

    #[test]
    fn an_empty_filter_keeps_everything() {
        assert!(keeps(&Filter::new(), "/any/thing"));
        assert!(Filter::new().is_empty());
    }
}
