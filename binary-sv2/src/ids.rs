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
