//! A JPEG decoded at 1/8 scale from its DC coefficients alone: each 8×8 block becomes one
//! pixel, the block's DC coefficient dequantized, divided by 8 and centred at 128 (what
//! libjpeg's 1×1 inverse DCT gives). The AC coefficients are only skipped, mostly one table
//! lookup each (a code and the number of its extra bits together), which is where a general decoder at
//! 1/8 spends most of its time (issue 23, item 8: 12 MP thumbnails).
//!
//! Baseline and extended 8-bit Huffman JPEGs (SOF0, SOF1) and progressive ones (SOF2: only
//! their DC scans are read, the AC scans are stepped over), grayscale or YCbCr, any
//! sampling factors whose ratios are whole, interleaved or not, with restart markers.
//! Chroma is upsampled by 2 with a triangle filter (as `jpeg-decoder` does), by 3 or 4 by
//! replication; YCbCr to RGB as JFIF.
//!
//! Everything else — arithmetic coding, 12-bit, lossless, CMYK, YCCK, RGB-coded files — and
//! every damaged file (cut short, a bad code, a missing restart marker, no end-of-image
//! marker) gives `None`, for a general decoder to decode or to tell what is wrong. Memory is
//! one `i32` and one byte per block plus the output: about 1/3 of a byte per pixel of the
//! image at most (4:4:4), which the caller bounds by refusing images too large to decode.

/// Bits of look-ahead in the Huffman tables: codes up to this long take one lookup.
const LOOKAHEAD: u32 = 10;
/// Bits of look-ahead in the AC skipping tables, which give two codes at once when both
/// are among them.
const PAIR_BITS: u32 = 12;

/// A JPEG at 1/8 scale: `width` × `height` RGB pixels, row-major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DcImage {
    /// ceil(image width / 8).
    pub width: u32,
    /// ceil(image height / 8).
    pub height: u32,
    /// 8-bit RGB, `width * height * 3` bytes.
    pub rgb: Vec<u8>,
}

/// The JPEG in `data` at 1/8 scale, or `None` when it is not one this decoder reads or is
/// damaged (see the module documentation). Never panics.
pub fn decode(data: &[u8]) -> Option<DcImage> {
    Decoder::default().run(data)
}

/// A lookup table over the next `LOOKAHEAD` bits.
type Table = [u16; 1 << LOOKAHEAD];

/// A canonical Huffman table as the lookups need it.
struct Huffman {
    /// For the next `LOOKAHEAD` bits: code length << 8 | symbol, or 0 for a longer code.
    fast: Box<Table>,
    /// For the next `PAIR_BITS` bits of an AC table: for the two codes they begin with, the
    /// bits to consume (codes and extra bits) | how far the coefficient index moves << 8
    /// (run + 1, 16 for ZRL, `EOB`); the same for the first code alone << 16; 0 for a
    /// longer code. When the second code is not among the bits, both are the first's.
    skip: Box<[u32; 1 << PAIR_BITS]>,
    /// For lengths 1..=16: the largest code of that length + 1 (0 when none), the first
    /// code of that length, and the index of its symbol in `symbols`.
    max_code: [u32; 17],
    first_code: [u32; 17],
    first_index: [u16; 17],
    symbols: Vec<u8>,
}

/// How far an end-of-block moves the coefficient index: past 63 whatever it was, and
/// distinguishable from a run that overshoots 63 (a damaged block).
const EOB: u32 = 128;

impl Huffman {
    /// The table of a DHT segment's `counts` (codes of each length 1..=16) and `symbols`.
    fn new(counts: &[u8], symbols: &[u8]) -> Option<Self> {
        let mut max_code = [0u32; 17];
        let mut first_code = [0u32; 17];
        let mut first_index = [0u16; 17];
        let mut fast: Box<Table> = vec![0u16; 1 << LOOKAHEAD]
            .into_boxed_slice()
            .try_into()
            .ok()?;
        let mut code = 0u32;
        let mut index = 0usize;
        for len in 1..=16u32 {
            let n = u32::from(counts[len as usize - 1]);
            first_code[len as usize] = code;
            first_index[len as usize] = index as u16;
            for _ in 0..n {
                // Codes must fit their length.
                if code >= 1 << len {
                    return None;
                }
                let symbol = *symbols.get(index)?;
                if len <= LOOKAHEAD {
                    let shift = LOOKAHEAD - len;
                    let entry = (len as u16) << 8 | u16::from(symbol);
                    let start = (code << shift) as usize;
                    fast[start..start + (1 << shift)].fill(entry);
                }
                code += 1;
                index += 1;
            }
            max_code[len as usize] = if n > 0 { code } else { 0 };
            code <<= 1;
        }
        if index != symbols.len() {
            return None;
        }
        let mut table = Self {
            fast,
            skip: vec![0u32; 1 << PAIR_BITS]
                .into_boxed_slice()
                .try_into()
                .ok()?,
            max_code,
            first_code,
            first_index,
            symbols: symbols.to_vec(),
        };
        // Each AC code (with its extra bits) in the next `PAIR_BITS` bits, and the next one
        // too when its code is among them: the extra bits' value is not needed, only their
        // number, so they need not be among the bits looked at.
        let advance = |symbol: u32| match (symbol >> 4, symbol & 15) {
            (15, 0) => 16,
            (_, 0) => EOB, // (0, 0); others undefined, and libjpeg ends the block too
            (run, _) => run + 1,
        };
        for bits in 0..1u32 << PAIR_BITS {
            let Some((len1, s1)) = table.prefix(bits, PAIR_BITS) else {
                continue;
            };
            let (total1, advance1) = (len1 + (s1 & 15), advance(s1));
            let (mut total, mut advance_both) = (total1, advance1);
            if total1 < PAIR_BITS && advance1 < EOB {
                let rest = PAIR_BITS - total1;
                if let Some((len2, s2)) = table.prefix(bits & ((1 << rest) - 1), rest) {
                    total += len2 + (s2 & 15);
                    advance_both += advance(s2);
                }
            }
            table.skip[bits as usize] = total | advance_both << 8 | total1 << 16 | advance1 << 24;
        }
        Some(table)
    }

    /// The symbol whose code begins the `avail` bits `bits`, and its code's length.
    fn prefix(&self, bits: u32, avail: u32) -> Option<(u32, u32)> {
        for len in 1..=avail.min(16) {
            let code = bits >> (avail - len);
            let l = len as usize;
            if self.max_code[l] != 0 && code < self.max_code[l] && code >= self.first_code[l] {
                let index = usize::from(self.first_index[l]) + (code - self.first_code[l]) as usize;
                return Some((len, u32::from(*self.symbols.get(index)?)));
            }
        }
        None
    }
}

/// The entropy-coded bits of a scan, most significant first, stuffed bytes removed.
struct Bits<'a> {
    data: &'a [u8],
    /// The next byte to load.
    pos: usize,
    /// `n` bits, left-aligned.
    buf: u64,
    n: u32,
    /// Zero bits loaded after the scan's data ran out (a marker or the end of the file):
    /// consuming any of them means the data was too short.
    zeros: u64,
}

impl<'a> Bits<'a> {
    fn new(data: &'a [u8], pos: usize) -> Self {
        Self {
            data,
            pos,
            buf: 0,
            n: 0,
            zeros: 0,
        }
    }

    /// At least 56 bits in `buf`.
    #[inline(always)]
    fn refill(&mut self) {
        if !refill_fast(self.data, &mut self.pos, &mut self.buf, &mut self.n) {
            self.refill_slow();
        }
    }

    #[cold]
    fn refill_slow(&mut self) {
        while self.n <= 56 {
            let byte = match self.data.get(self.pos) {
                Some(0xff) if self.data.get(self.pos + 1) == Some(&0) => {
                    self.pos += 2;
                    0xff
                }
                // A marker (or fill bytes before one), or the end: zeros from here on.
                Some(0xff) | None => {
                    self.zeros += 8;
                    0
                }
                Some(&b) => {
                    self.pos += 1;
                    b
                }
            };
            self.buf |= u64::from(byte) << (56 - self.n);
            self.n += 8;
        }
    }

    /// More bits were consumed than the data held.
    fn overrun(&self) -> bool {
        u64::from(self.n) < self.zeros
    }

    #[inline(always)]
    fn consume(&mut self, count: u32) {
        self.buf <<= count;
        self.n -= count;
    }

    /// `count` (0..=16) bits as a number; needs `count` bits in `buf`.
    #[inline(always)]
    fn take(&mut self, count: u32) -> u32 {
        if count == 0 {
            return 0;
        }
        let v = (self.buf >> (64 - count)) as u32;
        self.consume(count);
        v
    }

    /// A Huffman symbol; needs 16 bits in `buf`.
    #[inline(always)]
    fn symbol(&mut self, table: &Huffman) -> Option<u8> {
        let f = table.fast[(self.buf >> (64 - LOOKAHEAD)) as usize];
        if f != 0 {
            self.consume(u32::from(f >> 8));
            return Some(f as u8);
        }
        self.symbol_slow(table)
    }

    #[cold]
    fn symbol_slow(&mut self, table: &Huffman) -> Option<u8> {
        for len in LOOKAHEAD + 1..=16 {
            let code = (self.buf >> (64 - len)) as u32;
            let l = len as usize;
            if table.max_code[l] != 0 && code < table.max_code[l] {
                let index =
                    usize::from(table.first_index[l]) + (code - table.first_code[l]) as usize;
                self.consume(len);
                return table.symbols.get(index).copied();
            }
        }
        None
    }

    /// Steps over a block's AC coefficients (from index 1).
    #[inline(always)]
    fn skip_ac(&mut self, table: &Huffman) -> Option<()> {
        // The buffer in locals (registers) for the loop, written back around the rare calls.
        let (mut buf, mut n, mut pos) = (self.buf, self.n, self.pos);
        let mut k = 1u32;
        while k < 64 {
            if n < 32 && !refill_fast(self.data, &mut pos, &mut buf, &mut n) {
                (self.buf, self.n, self.pos) = (buf, n, pos);
                self.refill_slow();
                (buf, n, pos) = (self.buf, self.n, self.pos);
            }
            let e = table.skip[(buf >> (64 - PAIR_BITS)) as usize];
            if e != 0 {
                // Both codes when the first leaves the block open, else the first alone.
                let e = if k + (e >> 24) < 64 { e } else { e >> 16 };
                let count = e & 0xff;
                buf <<= count;
                n -= count;
                k += (e >> 8) & 0xff;
                continue;
            }
            (self.buf, self.n, self.pos) = (buf, n, pos);
            let symbol = u32::from(self.symbol_slow(table)?);
            let (run, size) = (symbol >> 4, symbol & 15);
            self.consume(size);
            (buf, n, pos) = (self.buf, self.n, self.pos);
            k += match (run, size) {
                (15, 0) => 16,
                (_, 0) => EOB,
                _ => run + 1,
            };
        }
        (self.buf, self.n, self.pos) = (buf, n, pos);
        // Past 63 only by an end-of-block; a run beyond the block is damage.
        (k == 64 || k >= EOB).then_some(())
    }
}

/// Loads whole bytes into `buf` (`n` bits, left-aligned) up to at least 56 bits when the
/// next eight bytes of `data` at `pos` hold no 0xFF (no stuffing, no marker: all data);
/// `false`, with nothing loaded, otherwise. The bits loaded beyond the whole bytes counted
/// are the next byte's, loaded again at the same place next time.
#[inline(always)]
fn refill_fast(data: &[u8], pos: &mut usize, buf: &mut u64, n: &mut u32) -> bool {
    let Some(next) = data.get(*pos..*pos + 8) else {
        return false;
    };
    let word = u64::from_be_bytes(next.try_into().unwrap_or([0xff; 8]));
    // A byte of `word` is 0xFF when that byte of !word is zero.
    let inverted = !word;
    if inverted.wrapping_sub(0x0101_0101_0101_0101) & word & 0x8080_8080_8080_8080 != 0 {
        return false;
    }
    *buf |= word >> *n;
    let bytes = (63 - *n) >> 3;
    *pos += bytes as usize;
    *n += bytes << 3;
    true
}

/// A frame component.
struct Component {
    id: u8,
    h: usize,
    v: usize,
    quant_table: usize,
    /// The quantization step of the DC coefficient, latched at its first scan.
    quant: Option<u16>,
    /// Blocks per row (whole MCUs) and rows.
    stride: usize,
    rows: usize,
    /// The DC coefficient of every block, not dequantized.
    dc: Vec<i32>,
}

#[derive(Default)]
struct Decoder {
    quant: [Option<u16>; 4],
    dc_tables: [Option<Huffman>; 4],
    ac_tables: [Option<Huffman>; 4],
    restart_interval: usize,
    adobe_transform: Option<u8>,
    frame: Option<Frame>,
}

struct Frame {
    progressive: bool,
    width: usize,
    height: usize,
    h_max: usize,
    v_max: usize,
    mcus_x: usize,
    mcus_y: usize,
    components: Vec<Component>,
}

/// One component of a scan: its index in the frame and its tables.
struct ScanComponent {
    index: usize,
    dc: usize,
    ac: usize,
}

/// What a scan does to the DC coefficients.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Baseline: DC and AC of every block; the DC kept, the AC skipped.
    Sequential,
    /// Progressive, first DC scan: the DC shifted left by `Al`.
    DcFirst(u32),
    /// Progressive DC refinement: one more bit, at `Al`.
    DcRefine(u32),
}

fn be16(data: &[u8], at: usize) -> Option<usize> {
    let b = data.get(at..at + 2)?;
    Some(usize::from(b[0]) << 8 | usize::from(b[1]))
}

impl Decoder {
    fn run(mut self, data: &[u8]) -> Option<DcImage> {
        if data.get(..2)? != [0xff, 0xd8] {
            return None;
        }
        let mut pos = 2;
        loop {
            // A marker: 0xFF, any fill bytes, the code.
            if *data.get(pos)? != 0xff {
                return None;
            }
            while *data.get(pos)? == 0xff {
                pos += 1;
            }
            let marker = data[pos];
            pos += 1;
            match marker {
                0xd9 => break,
                0x01 | 0xd0..=0xd7 => continue,
                0xd8 => return None,
                _ => {}
            }
            let len = be16(data, pos)?;
            let segment = data.get(pos + 2..pos.checked_add(len)?)?;
            if len < 2 {
                return None;
            }
            pos += len;
            match marker {
                0xc0..=0xc2 => self.frame_header(marker == 0xc2, segment)?,
                // Lossless, hierarchical, arithmetic coding.
                0xc3 | 0xc5..=0xc7 | 0xc8..=0xcb | 0xcd..=0xcf => return None,
                0xc4 => self.huffman_tables(segment)?,
                0xdb => self.quant_tables(segment)?,
                0xdd => self.restart_interval = be16(segment, 0)?,
                0xdc => return None, // DNL
                0xee if segment.starts_with(b"Adobe") => {
                    self.adobe_transform = Some(*segment.get(11)?);
                }
                0xda => pos = self.scan(data, segment, pos)?,
                _ => {}
            }
        }
        self.image()
    }

    fn frame_header(&mut self, progressive: bool, s: &[u8]) -> Option<()> {
        if self.frame.is_some() || *s.first()? != 8 {
            return None;
        }
        let height = be16(s, 1)?;
        let width = be16(s, 3)?;
        let count = usize::from(*s.get(5)?);
        if width == 0 || height == 0 || !(count == 1 || count == 3) {
            return None;
        }
        let mut components = Vec::with_capacity(count);
        for i in 0..count {
            let c = s.get(6 + 3 * i..9 + 3 * i)?;
            let (h, v) = (usize::from(c[1] >> 4), usize::from(c[1] & 15));
            if !(1..=4).contains(&h) || !(1..=4).contains(&v) || c[2] > 3 {
                return None;
            }
            if components.iter().any(|o: &Component| o.id == c[0]) {
                return None;
            }
            components.push(Component {
                id: c[0],
                h,
                v,
                quant_table: usize::from(c[2]),
                quant: None,
                stride: 0,
                rows: 0,
                dc: Vec::new(),
            });
        }
        if count == 3 {
            // RGB-coded: an Adobe transform of 0, or components named R, G, B.
            let ids: Vec<u8> = components.iter().map(|c| c.id).collect();
            if self.adobe_transform == Some(0) || ids == b"RGB" {
                return None;
            }
        }
        let h_max = components.iter().map(|c| c.h).max()?;
        let v_max = components.iter().map(|c| c.v).max()?;
        if components
            .iter()
            .any(|c| h_max % c.h != 0 || v_max % c.v != 0)
            || components.iter().map(|c| c.h * c.v).sum::<usize>() > 10
        {
            return None;
        }
        let mcus_x = width.div_ceil(8 * h_max);
        let mcus_y = height.div_ceil(8 * v_max);
        for c in &mut components {
            c.stride = mcus_x * c.h;
            c.rows = mcus_y * c.v;
            c.dc = vec![0; c.stride * c.rows];
        }
        self.frame = Some(Frame {
            progressive,
            width,
            height,
            h_max,
            v_max,
            mcus_x,
            mcus_y,
            components,
        });
        Some(())
    }

    fn huffman_tables(&mut self, mut s: &[u8]) -> Option<()> {
        while !s.is_empty() {
            let (class, id) = (s[0] >> 4, usize::from(s[0] & 15));
            let counts = s.get(1..17)?;
            let total: usize = counts.iter().map(|&c| usize::from(c)).sum();
            if total > 256 || class > 1 || id > 3 {
                return None;
            }
            let symbols = s.get(17..17 + total)?;
            let table = Huffman::new(counts, symbols)?;
            if class == 0 {
                self.dc_tables[id] = Some(table);
            } else {
                self.ac_tables[id] = Some(table);
            }
            s = &s[17 + total..];
        }
        Some(())
    }

    fn quant_tables(&mut self, mut s: &[u8]) -> Option<()> {
        while !s.is_empty() {
            let (precision, id) = (s[0] >> 4, usize::from(s[0] & 15));
            if id > 3 || precision > 1 {
                return None;
            }
            // The first value, in zig-zag order, is the DC step.
            let (q, size) = if precision == 0 {
                (u16::from(*s.get(1)?), 65)
            } else {
                (be16(s, 1)? as u16, 129)
            };
            s.get(..size)?;
            self.quant[id] = Some(q);
            s = &s[size..];
        }
        Some(())
    }

    /// Decodes the scan whose header is `s` and whose data starts at `pos`; returns where
    /// the next marker is.
    fn scan(&mut self, data: &[u8], s: &[u8], pos: usize) -> Option<usize> {
        let frame = self.frame.as_mut()?;
        let count = usize::from(*s.first()?);
        if count == 0 || count > 4 {
            return None;
        }
        let mut comps = Vec::with_capacity(count);
        for i in 0..count {
            let c = s.get(1 + 2 * i..3 + 2 * i)?;
            let index = frame.components.iter().position(|f| f.id == c[0])?;
            comps.push(ScanComponent {
                index,
                dc: usize::from(c[1] >> 4),
                ac: usize::from(c[1] & 15),
            });
        }
        let p = s.get(1 + 2 * count..4 + 2 * count)?;
        let (ss, se, ah, al) = (p[0], p[1], u32::from(p[2] >> 4), u32::from(p[2] & 15));
        let pass = if frame.progressive {
            if ss != 0 {
                // An AC scan: not needed. Its data ends at the next marker.
                return next_marker(data, pos);
            }
            if se != 0 || al > 13 {
                return None;
            }
            if ah == 0 {
                Pass::DcFirst(al)
            } else {
                Pass::DcRefine(al)
            }
        } else {
            if (ss, se, ah, al) != (0, 63, 0, 0) {
                return None;
            }
            Pass::Sequential
        };
        let needs_dc = !matches!(pass, Pass::DcRefine(_));
        let needs_ac = pass == Pass::Sequential;
        let mut dc: Vec<&Huffman> = Vec::with_capacity(count);
        let mut ac: Vec<&Huffman> = Vec::with_capacity(count);
        for sc in &comps {
            let c = &mut frame.components[sc.index];
            if c.quant.is_none() {
                c.quant = Some(self.quant[c.quant_table]?);
            }
            if needs_dc {
                dc.push(self.dc_tables.get(sc.dc)?.as_ref()?);
            }
            if needs_ac {
                ac.push(self.ac_tables.get(sc.ac)?.as_ref()?);
            }
        }
        // The blocks of one MCU: (component in the scan, column, row) within the MCU.
        let single = count == 1;
        let mut units: Vec<(usize, usize, usize)> = Vec::new();
        for (i, sc) in comps.iter().enumerate() {
            let c = &frame.components[sc.index];
            let (h, v) = if single { (1, 1) } else { (c.h, c.v) };
            for dy in 0..v {
                for dx in 0..h {
                    units.push((i, dx, dy));
                }
            }
        }
        if units.len() > 10 {
            return None;
        }
        // A lone component's scan covers its own blocks only, not whole MCUs.
        let (mcus_x, mcus_y) = if single {
            let c = &frame.components[comps[0].index];
            (
                (frame.width * c.h).div_ceil(frame.h_max).div_ceil(8),
                (frame.height * c.v).div_ceil(frame.v_max).div_ceil(8),
            )
        } else {
            (frame.mcus_x, frame.mcus_y)
        };
        let mut bits = Bits::new(data, pos);
        let mut preds = [0i32; 4];
        let restart = self.restart_interval;
        let mut until_restart = restart;
        let mut next_rst = 0u8;

        let total = mcus_x * mcus_y;
        for mcu in 0..total {
            let (mx, my) = (mcu % mcus_x, mcu / mcus_x);
            for &(i, dx, dy) in &units {
                let c = &mut frame.components[comps[i].index];
                let (bw, bh) = if single { (1, 1) } else { (c.h, c.v) };
                let at = (my * bh + dy) * c.stride + mx * bw + dx;
                let coef = c.dc.get_mut(at)?;
                if bits.n < 32 {
                    bits.refill();
                }
                match pass {
                    Pass::Sequential => {
                        let size = u32::from(bits.symbol(dc[i])?);
                        if size > 15 {
                            return None;
                        }
                        let diff = extend(bits.take(size), size);
                        preds[i] = preds[i].wrapping_add(diff);
                        *coef = preds[i];
                        bits.skip_ac(ac[i])?;
                    }
                    Pass::DcFirst(al) => {
                        let size = u32::from(bits.symbol(dc[i])?);
                        if size > 15 {
                            return None;
                        }
                        let diff = extend(bits.take(size), size);
                        preds[i] = preds[i].wrapping_add(diff);
                        *coef = preds[i].wrapping_shl(al);
                    }
                    Pass::DcRefine(al) => {
                        if bits.take(1) == 1 {
                            *coef |= 1 << al;
                        }
                    }
                }
            }
            if bits.overrun() {
                return None;
            }
            if restart > 0 && mcu + 1 < total {
                until_restart -= 1;
                if until_restart == 0 {
                    // The restart marker due, then fresh bits and predictions.
                    let mut p = bits.pos;
                    while *data.get(p)? == 0xff {
                        p += 1;
                    }
                    if p == bits.pos || data[p] != 0xd0 + next_rst {
                        return None;
                    }
                    next_rst = (next_rst + 1) & 7;
                    bits = Bits::new(data, p + 1);
                    preds = [0; 4];
                    until_restart = restart;
                }
            }
        }
        next_marker(data, bits.pos)
    }

    /// The image from the DC coefficients.
    fn image(self) -> Option<DcImage> {
        let frame = self.frame?;
        // An Adobe segment after the frame header may still say RGB.
        if frame.components.len() == 3 && self.adobe_transform == Some(0) {
            return None;
        }
        let (w, h) = (frame.width.div_ceil(8), frame.height.div_ceil(8));
        // Each component's pixels at its own resolution.
        let planes: Vec<Vec<u8>> = frame
            .components
            .iter()
            .map(|c| {
                let q = i64::from(c.quant?);
                Some(
                    c.dc.iter()
                        .map(|&d| {
                            let v = (i64::from(d) * q + 4) >> 3;
                            (v + 128).clamp(0, 255) as u8
                        })
                        .collect(),
                )
            })
            .collect::<Option<_>>()?;
        // Each component on the output's grid.
        let full: Vec<Vec<u8>> = frame
            .components
            .iter()
            .zip(&planes)
            .map(|(c, plane)| {
                let (fx, fy) = (frame.h_max / c.h, frame.v_max / c.v);
                let valid_x = (frame.width * c.h).div_ceil(frame.h_max).div_ceil(8);
                let valid_y = (frame.height * c.v).div_ceil(frame.v_max).div_ceil(8);
                upsample(plane, c.stride, (fx, fy), (valid_x, valid_y), (w, h))
            })
            .collect();
        let mut rgb = Vec::with_capacity(w * h * 3);
        if let [l] = full.as_slice() {
            rgb.extend(l.iter().flat_map(|&l| [l, l, l]));
        } else {
            for ((&y, &cb), &cr) in full[0].iter().zip(&full[1]).zip(&full[2]) {
                let (y, cb, cr) = (i32::from(y), i32::from(cb) - 128, i32::from(cr) - 128);
                let r = y + ((91_881 * cr + 32_768) >> 16);
                let g = y + ((-22_554 * cb - 46_802 * cr + 32_768) >> 16);
                let b = y + ((116_130 * cb + 32_768) >> 16);
                rgb.extend_from_slice(&[
                    r.clamp(0, 255) as u8,
                    g.clamp(0, 255) as u8,
                    b.clamp(0, 255) as u8,
                ]);
            }
        }
        Some(DcImage {
            width: u32::try_from(w).ok()?,
            height: u32::try_from(h).ok()?,
            rgb,
        })
    }
}

/// `plane` (`stride` samples a row, of which `valid` columns and rows hold the image)
/// brought to `out` (width, height) by `factor` (each 1 to 4): by 2 with a triangle filter
/// (each output sample 3/4 its nearest input and 1/4 the next nearest, per axis, as
/// `jpeg-decoder` and libjpeg's "fancy" upsampling do); by replication on both axes when
/// either factor is 3 or 4 (as both of those do then).
fn upsample(
    plane: &[u8],
    stride: usize,
    factor: (usize, usize),
    valid: (usize, usize),
    out: (usize, usize),
) -> Vec<u8> {
    // For each output column (row): its nearest input column (row) and the next nearest.
    let axis = |f: usize, valid: usize, n: usize| -> Vec<(usize, usize)> {
        let last = valid.max(1) - 1;
        (0..n)
            .map(|x| {
                let near = (x / f).min(last);
                let far = match f {
                    2 if x % 2 == 0 => near.saturating_sub(1),
                    2 => (near + 1).min(last),
                    _ => near,
                };
                (near, far)
            })
            .collect()
    };
    let xs = axis(factor.0, valid.0, out.0);
    let ys = axis(factor.1, valid.1, out.1);
    if factor == (1, 1) || factor.0 > 2 || factor.1 > 2 {
        return ys
            .iter()
            .flat_map(|&(y, _)| {
                xs.iter()
                    .map(move |&(x, _)| plane.get(y * stride + x).copied().unwrap_or(128))
            })
            .collect();
    }
    let at = |x: usize, y: usize| u32::from(plane.get(y * stride + x).copied().unwrap_or(128));
    let mut result = Vec::with_capacity(out.0 * out.1);
    for &(yn, yf) in &ys {
        for &(xn, xf) in &xs {
            let near = 3 * at(xn, yn) + at(xf, yn);
            let far = 3 * at(xn, yf) + at(xf, yf);
            result.push(((3 * near + far + 8) >> 4) as u8);
        }
    }
    result
}

/// The position of the marker that ends the entropy-coded data starting at `pos` (restart
/// markers and stuffed bytes are part of the data).
fn next_marker(data: &[u8], mut pos: usize) -> Option<usize> {
    loop {
        let at = pos + data.get(pos..)?.iter().position(|&b| b == 0xff)?;
        let mut end = at;
        while *data.get(end)? == 0xff {
            end += 1;
        }
        match data[end] {
            0x00 | 0xd0..=0xd7 => pos = end + 1,
            _ => return Some(at),
        }
    }
}

/// The signed value of `size` extra bits `v` (JPEG's EXTEND).
#[inline(always)]
fn extend(v: u32, size: u32) -> i32 {
    if size == 0 {
        0
    } else if v < 1 << (size - 1) {
        v as i32 - (1 << size) + 1
    } else {
        v as i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jpeg_encoder::{ColorType, Encoder, SamplingFactor};

    /// A picture with gradients, hard edges and noise, `w` × `h` RGB.
    fn scene(w: usize, h: usize, seed: u32) -> Vec<u8> {
        let mut state = seed.wrapping_mul(2_654_435_761).max(1);
        let mut noise = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state % 41) as i32 - 20
        };
        let mut rgb = Vec::with_capacity(w * h * 3);
        for y in 0..h {
            for x in 0..w {
                let inside = (x * 3 / w + y * 2 / h).is_multiple_of(2);
                let base = [
                    (x * 255 / w) as i32,
                    (y * 255 / h) as i32,
                    if inside { 220 } else { 30 },
                ];
                for b in base {
                    rgb.push((b + noise()).clamp(0, 255) as u8);
                }
            }
        }
        rgb
    }

    fn encode(
        w: usize,
        h: usize,
        color: ColorType,
        setup: impl FnOnce(&mut Encoder<&mut Vec<u8>>),
    ) -> Vec<u8> {
        let rgb = scene(w, h, (w * h) as u32);
        let pixels: Vec<u8> = if color == ColorType::Luma {
            rgb.chunks_exact(3).map(|p| p[1]).collect()
        } else {
            rgb
        };
        let mut out = Vec::new();
        let mut e = Encoder::new(&mut out, 90);
        setup(&mut e);
        e.encode(&pixels, w as u16, h as u16, color).unwrap();
        out
    }

    /// jpeg-decoder's own 1/8 decode, as RGB.
    fn reference(data: &[u8]) -> (u32, u32, Vec<u8>) {
        let mut d = jpeg_decoder::Decoder::new(data);
        d.read_info().unwrap();
        let info = d.info().unwrap();
        let (w, h) = d
            .scale(info.width.div_ceil(8), info.height.div_ceil(8))
            .unwrap();
        let px = d.decode().unwrap();
        let rgb = match d.info().unwrap().pixel_format {
            jpeg_decoder::PixelFormat::L8 => px.iter().flat_map(|&l| [l, l, l]).collect(),
            jpeg_decoder::PixelFormat::RGB24 => px,
            other => panic!("{other:?}"),
        };
        (w.into(), h.into(), rgb)
    }

    /// The mean and largest absolute difference per channel from jpeg-decoder's 1/8.
    fn difference(data: &[u8]) -> (f64, u8) {
        let ours = decode(data).expect("decoded");
        let (w, h, theirs) = reference(data);
        assert_eq!((ours.width, ours.height), (w, h));
        assert_eq!(ours.rgb.len(), theirs.len());
        let sum: u64 = ours
            .rgb
            .iter()
            .zip(&theirs)
            .map(|(a, b)| u64::from(a.abs_diff(*b)))
            .sum();
        let max = ours
            .rgb
            .iter()
            .zip(&theirs)
            .map(|(a, b)| a.abs_diff(*b))
            .max()
            .unwrap();
        (sum as f64 / theirs.len() as f64, max)
    }

    /// Mean difference at most 1.5 levels per channel, and at most 4 anywhere
    /// (rounding: libjpeg's 1×1 IDCT rounds, jpeg-decoder's truncates; its YCbCr to RGB
    /// rounds differently too).
    fn assert_close(data: &[u8], what: &str) {
        let (mean, max) = difference(data);
        eprintln!("{what}: mean {mean:.3}, max {max}");
        assert!(mean <= 1.5 && max <= 4, "{what}: mean {mean:.3}, max {max}");
    }

    #[test]
    fn every_sampling_of_a_baseline_jpeg_matches_jpeg_decoders_eighth() {
        for (factor, name) in [
            (SamplingFactor::F_1_1, "4:4:4"),
            (SamplingFactor::F_2_1, "4:2:2"),
            (SamplingFactor::F_2_2, "4:2:0"),
            (SamplingFactor::F_1_2, "4:4:0"),
            (SamplingFactor::F_4_1, "4:1:1"),
            (SamplingFactor::F_2_4, "2x4"),
        ] {
            // Odd sizes: neither a multiple of 8 nor of the MCU.
            for (w, h) in [(803, 611), (640, 480), (9, 17)] {
                let data = encode(w, h, ColorType::Rgb, |e| e.set_sampling_factor(factor));
                assert_close(&data, &format!("{name} {w}×{h}"));
            }
        }
    }

    #[test]
    fn grayscale_restart_intervals_and_optimized_tables_match_jpeg_decoders_eighth() {
        let gray = encode(1001, 333, ColorType::Luma, |_| {});
        assert_close(&gray, "grayscale");
        for interval in [1, 3, 7, 64] {
            let data = encode(777, 555, ColorType::Rgb, |e| {
                e.set_sampling_factor(SamplingFactor::F_2_2);
                e.set_restart_interval(interval);
            });
            assert!(
                data.windows(2).any(|m| m == [0xff, 0xd7]),
                "restart markers"
            );
            assert_close(&data, &format!("restart interval {interval}"));
        }
        let optimized = encode(777, 555, ColorType::Rgb, |e| {
            // (With restart intervals too, jpeg-encoder 0.7.1 trips its own debug assertion.)
            e.set_optimized_huffman_tables(true);
            e.set_sampling_factor(SamplingFactor::F_1_1);
        });
        assert_close(&optimized, "optimized Huffman tables");
        let gray_restart = encode(250, 90, ColorType::Luma, |e| e.set_restart_interval(2));
        assert_close(&gray_restart, "grayscale with restarts");
    }

    #[test]
    fn progressive_jpegs_are_read_from_their_dc_scans() {
        for factor in [SamplingFactor::F_1_1, SamplingFactor::F_2_2] {
            let data = encode(705, 403, ColorType::Rgb, |e| {
                e.set_progressive(true);
                e.set_sampling_factor(factor);
                e.set_restart_interval(4);
            });
            assert!(data.windows(2).any(|m| m == [0xff, 0xc2]), "progressive");
            assert_close(&data, "progressive");
        }
        let gray = encode(300, 200, ColorType::Luma, |e| e.set_progressive(true));
        assert_close(&gray, "progressive grayscale");
    }

    #[test]
    fn cut_damaged_and_unsupported_jpegs_and_garbage_give_none() {
        let data = encode(400, 300, ColorType::Rgb, |e| {
            e.set_sampling_factor(SamplingFactor::F_2_2);
            e.set_restart_interval(8);
        });
        assert!(decode(&data).is_some());
        // Cut anywhere: never a panic, and never an image once the scan is cut.
        let sos = data.windows(2).position(|m| m == [0xff, 0xda]).unwrap();
        for len in (0..data.len() - 2).step_by(5) {
            let got = decode(&data[..len]);
            if len > sos {
                assert!(got.is_none(), "cut at {len} of {}", data.len());
            }
        }
        // Every byte of the header and of the first restart interval flipped in turn: no
        // panic (the result may be an image or None).
        for at in (0..data.len().min(sos + 400)).step_by(3) {
            let mut bad = data.clone();
            bad[at] ^= 0x55;
            let _ = decode(&bad);
        }
        // A restart marker removed: its interval runs into the next one.
        let rst = data.windows(2).position(|m| m == [0xff, 0xd3]).unwrap();
        let mut missing = data.clone();
        missing.drain(rst..rst + 2);
        assert!(decode(&missing).is_none());
        // Garbage, with and without a JPEG's first bytes.
        let mut state = 0x1234_5678u32;
        for round in 0..300 {
            let mut bytes: Vec<u8> = (0..(round * 7) % 2000)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 17;
                    state ^= state << 5;
                    state as u8
                })
                .collect();
            if round % 2 == 0 && bytes.len() > 2 {
                bytes[..2].copy_from_slice(&[0xff, 0xd8]);
            }
            assert!(decode(&bytes).is_none());
        }
        // CMYK (four components) is for a general decoder.
        let cmyk = {
            let mut out = Vec::new();
            let px = vec![40u8; 64 * 64 * 4];
            Encoder::new(&mut out, 90)
                .encode(&px, 64, 64, ColorType::Cmyk)
                .unwrap();
            out
        };
        assert!(decode(&cmyk).is_none());
    }
}
