//! Compile-time helpers for message-set id lists ([`MessageSet::IDS`](crate::MessageSet::IDS)),
//! used by `#[derive(MessageSet)]`.

/// `true` if the two id lists have an `(extension_type, msg_type)` pair in common.
pub const fn ids_overlap(a: &[(u16, u8)], b: &[(u16, u8)]) -> bool {
    let mut i = 0;
    while i < a.len() {
        let mut j = 0;
        while j < b.len() {
            if a[i].0 == b[j].0 && a[i].1 == b[j].1 {
                return true;
            }
            j += 1;
        }
        i += 1;
    }
    false
}

/// Total number of ids in `parts`.
pub const fn ids_len(parts: &[&[(u16, u8)]]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < parts.len() {
        n += parts[i].len();
        i += 1;
    }
    n
}

/// The id lists of `parts` one after the other; `N` must be [`ids_len`]`(parts)`.
pub const fn ids_concat<const N: usize>(parts: &[&[(u16, u8)]]) -> [(u16, u8); N] {
    let mut out = [(0u16, 0u8); N];
    let mut k = 0;
    let mut i = 0;
    while i < parts.len() {
        let mut j = 0;
        while j < parts[i].len() {
            out[k] = parts[i][j];
            k += 1;
            j += 1;
        }
        i += 1;
    }
    out
}

/// The names of `parts`' messages, one per id in the order of [`ids_concat`]; a part
/// whose names are not listed (its `names` entry is not as long as its ids) gives `"?"`.
/// `N` must be [`ids_len`]`(ids)`.
pub const fn names_concat<const N: usize>(
    ids: &[&[(u16, u8)]],
    names: &[&[&'static str]],
) -> [&'static str; N] {
    let mut out = ["?"; N];
    let mut k = 0;
    let mut i = 0;
    while i < ids.len() {
        let listed = i < names.len() && names[i].len() == ids[i].len();
        let mut j = 0;
        while j < ids[i].len() {
            if listed {
                out[k] = names[i][j];
            }
            k += 1;
            j += 1;
        }
        i += 1;
    }
    out
}

/// One side of an overlap check: a variant's name, ids and message names.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    /// The variant.
    pub variant: &'a str,
    /// Its set's ids ([`MessageSet::IDS`](crate::MessageSet::IDS)).
    pub ids: &'a [(u16, u8)],
    /// Its set's names ([`MessageSet::NAMES`](crate::MessageSet::NAMES)).
    pub names: &'a [&'a str],
}

/// The compile error `#[derive(MessageSet)]` reports when two variants decode one id,
/// built at compile time: the id in hex and the message on each side.
#[derive(Debug)]
pub struct Overlap {
    buf: [u8; Overlap::CAP],
    len: usize,
}

impl Overlap {
    const CAP: usize = 512;

    /// The report for the first id `a` and `b` have in common, if any. `set` is the
    /// enum's name.
    pub const fn check(set: &str, a: Side<'_>, b: Side<'_>) -> Overlap {
        let mut r = Overlap {
            buf: [0; Overlap::CAP],
            len: 0,
        };
        let mut i = 0;
        while i < a.ids.len() {
            let mut j = 0;
            while j < b.ids.len() {
                let (ext, mt) = a.ids[i];
                if ext == b.ids[j].0 && mt == b.ids[j].1 {
                    r.push("#[derive(MessageSet)] on `");
                    r.push(set);
                    r.push("`: variants `");
                    r.push(a.variant);
                    r.push("` and `");
                    r.push(b.variant);
                    r.push("` both decode extension 0x");
                    r.push_hex(ext as u32, 4);
                    r.push(", msg_type 0x");
                    r.push_hex(mt as u32, 2);
                    r.push(" (`");
                    r.push(name_at(a.names, a.ids.len(), i));
                    r.push("` in `");
                    r.push(a.variant);
                    r.push("`, `");
                    r.push(name_at(b.names, b.ids.len(), j));
                    r.push("` in `");
                    r.push(b.variant);
                    r.push("`): a frame must decode into one variant, so keep that message in one of them");
                    return r;
                }
                j += 1;
            }
            i += 1;
        }
        r
    }

    /// The report, or `None` if the two sides have no id in common.
    pub const fn message(&self) -> Option<&str> {
        if self.len == 0 {
            return None;
        }
        match core::str::from_utf8(self.buf.split_at(self.len).0) {
            Ok(s) => Some(s),
            Err(_) => Some("#[derive(MessageSet)]: two variants decode a message id in common"),
        }
    }

    /// Appends `s` whole, or nothing if it does not fit (so the text stays UTF-8).
    const fn push(&mut self, s: &str) {
        let s = s.as_bytes();
        if self.len + s.len() > Overlap::CAP {
            return;
        }
        let mut i = 0;
        while i < s.len() {
            self.buf[self.len] = s[i];
            self.len += 1;
            i += 1;
        }
    }

    /// Appends `digits` lowercase hex digits of `v`.
    const fn push_hex(&mut self, v: u32, digits: u32) {
        let mut d = digits;
        while d > 0 && self.len < Overlap::CAP {
            d -= 1;
            let nibble = ((v >> (4 * d)) & 0xf) as u8;
            self.buf[self.len] = if nibble < 10 {
                b'0' + nibble
            } else {
                b'a' + nibble - 10
            };
            self.len += 1;
        }
    }
}

/// The `i`-th name, or `"?"` when the set does not list its names.
const fn name_at<'a>(names: &[&'a str], ids_len: usize, i: usize) -> &'a str {
    if names.len() == ids_len {
        names[i]
    } else {
        "?"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overlap_names_the_id_in_hex_and_both_messages() {
        let a = Side {
            variant: "Std",
            ids: &[(0, 0x00), (0, 0x01)],
            names: &["SetupConnection", "SetupConnectionSuccess"],
        };
        let b = Side {
            variant: "Ext",
            ids: &[(0x4a11, 0x02), (0, 0x01)],
            names: &[],
        };
        let r = Overlap::check("Set", a, b);
        assert_eq!(
            r.message(),
            Some(
                "#[derive(MessageSet)] on `Set`: variants `Std` and `Ext` both decode extension 0x0000, msg_type 0x01 (`SetupConnectionSuccess` in `Std`, `?` in `Ext`): a frame must decode into one variant, so keep that message in one of them"
            )
        );
        let none = Overlap::check(
            "Set",
            a,
            Side {
                ids: &[(1, 1)],
                ..b
            },
        );
        assert_eq!(none.message(), None);
        assert_eq!(
            names_concat::<3>(&[a.ids, &[(9, 9)]], &[a.names, &[]]),
            ["SetupConnection", "SetupConnectionSuccess", "?"]
        );
    }
}
