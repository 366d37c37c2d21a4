//! When a photo or video was taken, as the catalog stores it: the one owner of that fact's
//! form. Every format's date (EXIF's `YYYY:MM:DD HH:MM:SS` with its sub-seconds and
//! offset, XMP's and QuickTime's ISO 8601, seconds since 1904 or 1970, RIFF's text, the
//! raw makers') becomes a [`Taken`], and a `Taken` is written in one form:
//!
//! `YYYY-MM-DDTHH:MM:SS[.mmm][±HH:MM]`
//!
//! the camera's wall-clock date and time; milliseconds, three digits, when the source has
//! a fraction of a second (`.5` is `.500`; digits past the third are dropped); the offset
//! from UTC when the source gives one (UTC is `+00:00`, never `Z`). A value that is not a
//! date (a zero date `0000:00:00 00:00:00`, month 13, 30 February, hour 24) is none.
//! `ORDER BY taken` and `taken >= '2024-01-01'` then compare like with like.

/// A date and time as the catalog stores `taken` (see the module's manual).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Taken {
    year: u16,
    month: u8,
    day: u8,
    hour: u8,
    minute: u8,
    second: u8,
    millis: Option<u16>,
    /// Minutes east of UTC.
    offset: Option<i16>,
}

impl Taken {
    /// The date and time given, if it is one (year 1 to 9999; a leap second allowed).
    pub(crate) fn new(y: u32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> Option<Taken> {
        let valid = (1..=9999).contains(&y)
            && (1..=12).contains(&mo)
            && d >= 1
            && d <= days_in_month(y, mo)
            && h < 24
            && mi < 60
            && s <= 60;
        valid.then_some(Taken {
            year: y as u16,
            month: mo as u8,
            day: d as u8,
            hour: h as u8,
            minute: mi as u8,
            second: s as u8,
            millis: None,
            offset: None,
        })
    }

    /// `secs` seconds since 1970-01-01 as UTC (`utc`: written `+00:00`) or as a wall clock
    /// whose zone is unknown.
    pub(crate) fn from_unix(secs: i64, utc: bool) -> Option<Taken> {
        let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
        let (y, m, d) = civil_from_days(days);
        let t = Taken::new(
            u32::try_from(y).ok()?,
            m,
            d,
            (rest / 3600) as u32,
            (rest / 60 % 60) as u32,
            (rest % 60) as u32,
        )?;
        Some(if utc { t.with_offset(0) } else { t })
    }

    /// The same with milliseconds from a fraction's digits (`"5"` is 500, `"123456"` 123);
    /// anything but digits leaves it as it was.
    pub(crate) fn with_fraction(mut self, digits: &str) -> Taken {
        let digits = digits.trim();
        if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) {
            let three: String = digits.chars().chain("00".chars()).take(3).collect();
            self.millis = three.parse().ok();
        }
        self
    }

    /// The same at `minutes` east of UTC (within ±18 hours, else unchanged).
    pub(crate) fn with_offset(mut self, minutes: i32) -> Taken {
        if minutes.abs() <= 18 * 60 {
            self.offset = Some(minutes as i16);
        }
        self
    }

    /// The same with an offset written `+HH:MM`, `+HHMM`, `+HH` or `Z`; anything else
    /// leaves it as it was.
    pub(crate) fn with_offset_text(self, text: &str) -> Taken {
        match parse_offset(text.trim().as_bytes()) {
            Some(m) => self.with_offset(m),
            None => self,
        }
    }

    /// EXIF's `YYYY:MM:DD HH:MM:SS` (any separators where EXIF has `:` and ` `), with its
    /// `SubSecTime*` and `OffsetTime*` if given.
    pub(crate) fn exif(date: &str, subsec: Option<&str>, offset: Option<&str>) -> Option<Taken> {
        let b = date.as_bytes();
        let num = |r: std::ops::Range<usize>| number(b.get(r)?);
        let t = Taken::new(
            num(0..4)?,
            num(5..7)?,
            num(8..10)?,
            num(11..13)?,
            num(14..16)?,
            num(17..19)?,
        )?;
        let t = match subsec {
            Some(s) => t.with_fraction(s),
            None => t,
        };
        Some(match offset {
            Some(o) => t.with_offset_text(o),
            None => t,
        })
    }

    /// ISO 8601 as XMP, QuickTime and the catalog write it: `YYYY-MM-DD[T ]HH:MM:SS`, a
    /// fraction, and a zone (`Z`, `±HH:MM`, `±HHMM`, `±HH`). A date without its time, or
    /// anything after the zone, is none.
    pub(crate) fn iso(text: &str) -> Option<Taken> {
        let b = text.trim().as_bytes();
        let sep = |i: usize, c: &[u8]| b.get(i).is_some_and(|x| c.contains(x));
        if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"T ") && sep(13, b":") && sep(16, b":")) {
            return None;
        }
        let t = Taken::exif(std::str::from_utf8(&b[..19]).ok()?, None, None)?;
        let mut rest = &b[19..];
        let mut t = t;
        if let [b'.', tail @ ..] = rest {
            let n = tail.iter().take_while(|c| c.is_ascii_digit()).count();
            t = t.with_fraction(std::str::from_utf8(&tail[..n]).ok()?);
            rest = &tail[n..];
        }
        if rest.is_empty() {
            return Some(t);
        }
        parse_offset(rest).map(|m| t.with_offset(m))
    }

    /// Milliseconds of the wall clock since 1970-01-01 (the offset ignored: shots compared
    /// are of one camera, whose clock it is).
    pub(crate) fn wall_ms(&self) -> i64 {
        let days = days_from_civil(
            i64::from(self.year),
            i64::from(self.month),
            i64::from(self.day),
        );
        ((days * 24 + i64::from(self.hour)) * 60 + i64::from(self.minute)) * 60_000
            + i64::from(self.second) * 1000
            + i64::from(self.millis.unwrap_or(0))
    }
}

impl std::fmt::Display for Taken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )?;
        if let Some(ms) = self.millis {
            write!(f, ".{ms:03}")?;
        }
        if let Some(m) = self.offset {
            let sign = if m < 0 { '-' } else { '+' };
            write!(f, "{sign}{:02}:{:02}", m.abs() / 60, m.abs() % 60)?;
        }
        Ok(())
    }
}

/// A zone: `Z`, `±HH:MM`, `±HHMM` or `±HH`, as minutes east of UTC.
fn parse_offset(b: &[u8]) -> Option<i32> {
    let (sign, rest) = match b {
        [b'Z'] => return Some(0),
        [b'+', rest @ ..] => (1, rest),
        [b'-', rest @ ..] => (-1, rest),
        _ => return None,
    };
    let (h, m) = match rest {
        [h1, h2] => (number(&[*h1, *h2])?, 0),
        [h1, h2, b':', m1, m2] | [h1, h2, m1, m2] => (number(&[*h1, *h2])?, number(&[*m1, *m2])?),
        _ => return None,
    };
    (h <= 18 && m < 60).then(|| sign * (h as i32 * 60 + m as i32))
}

/// The decimal number `b` (ASCII digits only).
fn number(b: &[u8]) -> Option<u32> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(b).ok()?.parse().ok()
}

fn days_in_month(y: u32, m: u32) -> u32 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if y.is_multiple_of(4) && (!y.is_multiple_of(100) || y.is_multiple_of(400)) => 29,
        2 => 28,
        _ => 31,
    }
}

/// The calendar date (year, month, day) of a day count since 1970-01-01 (Howard
/// Hinnant's algorithm, <https://howardhinnant.github.io/date_algorithms.html>).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the inverse of
/// [`civil_from_days`]).
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iso(s: &str) -> Option<String> {
        Taken::iso(s).map(|t| t.to_string())
    }

    #[test]
    fn every_source_is_written_in_the_one_form() {
        let exif =
            |d: &str, s: Option<&str>, o: Option<&str>| Taken::exif(d, s, o).map(|t| t.to_string());
        assert_eq!(
            exif("2024:05:06 07:08:09", Some("123"), Some("+02:00")).as_deref(),
            Some("2024-05-06T07:08:09.123+02:00")
        );
        assert_eq!(
            exif("2024:05:06 07:08:09", Some("5"), None).as_deref(),
            Some("2024-05-06T07:08:09.500")
        );
        assert_eq!(
            exif("2024:05:06 07:08:09", Some("123456"), None).as_deref(),
            Some("2024-05-06T07:08:09.123")
        );
        assert_eq!(
            exif("2024:05:06 07:08:09", Some(" "), Some("junk")).as_deref(),
            Some("2024-05-06T07:08:09")
        );
        assert_eq!(
            iso("2019-05-25T14:32:17-0700").as_deref(),
            Some("2019-05-25T14:32:17-07:00")
        );
        assert_eq!(
            iso("2019-05-25T14:32:17.5Z").as_deref(),
            Some("2019-05-25T14:32:17.500+00:00")
        );
        assert_eq!(
            iso("2019-05-25 14:32:17").as_deref(),
            Some("2019-05-25T14:32:17")
        );
        assert_eq!(
            iso("2019-05-25T14:32:17+05").as_deref(),
            Some("2019-05-25T14:32:17+05:00")
        );
        assert_eq!(
            Taken::from_unix(0, true).map(|t| t.to_string()).as_deref(),
            Some("1970-01-01T00:00:00+00:00")
        );
        assert_eq!(
            Taken::from_unix(951_825_600, false)
                .map(|t| t.to_string())
                .as_deref(),
            Some("2000-02-29T12:00:00")
        );
        // Idempotent: the catalog's own form reads back as itself.
        for s in [
            "2024-05-06T07:08:09.123+02:00",
            "2024-05-06T07:08:09",
            "1999-12-31T23:59:60-11:30",
        ] {
            assert_eq!(iso(s).as_deref(), Some(s));
        }
    }

    #[test]
    fn what_is_not_a_date_is_none() {
        for bad in [
            "0000-00-00T00:00:00",
            "2024-13-01T00:00:00",
            "2024-02-30T00:00:00",
            "2023-02-29T00:00:00",
            "2024-01-00T00:00:00",
            "2024-01-01T24:00:00",
            "2024-01-01T23:60:00",
            "2008",
            "2024-01-01",
            "2019-05-25T14:32:17+7",
            "2019-05-25T14:32:17+02:00junk",
            "2019-05-25T14:32:17+19:00",
            "    -  -     :  :  ",
        ] {
            assert_eq!(iso(bad), None, "{bad}");
        }
        assert_eq!(Taken::exif("0000:00:00 00:00:00", None, None), None);
        assert_eq!(Taken::exif("    :  :     :  :  ", None, None), None);
        assert_eq!(Taken::exif("2006:07:08 21:14:\u{FFFD}5", None, None), None);
        assert!(iso("2024-02-29T00:00:00").is_some() && iso("2000-02-29T00:00:00").is_some());
        assert_eq!(iso("1900-02-29T00:00:00"), None);
    }

    #[test]
    fn wall_clock_milliseconds_ignore_the_offset() {
        let ms = |s: &str| Taken::iso(s).unwrap().wall_ms();
        assert_eq!(ms("1970-01-01T00:00:00"), 0);
        assert_eq!(ms("1970-01-02T00:00:01.5"), 86_401_500);
        assert_eq!(ms("2000-03-01T00:00:00+02:00"), 951_868_800_000);
        assert_eq!(
            ms("2026-05-01T10:00:01.250") - ms("2026-05-01T10:00:00"),
            1250
        );
    }

    #[test]
    fn day_counts_become_calendar_dates_and_back() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_425), (2025, 12, 3));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        for z in [-800_000, -1, 0, 59, 11_016, 19_723, 2_932_896] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, i64::from(m), i64::from(d)), z);
        }
    }
}
