//! A worker name as a Stratum V2 `user_identity` (extension 0x0002), which holds at most
//! 32 bytes while SV1 worker names are often longer (a Bitcoin address and a rig name).

use sv2c_binary::tlv::{TlvBuf, UserIdentity};
use sv2c_channels::pow::sha256d;

/// The longest `user_identity` (bytes).
pub(crate) const MAX_IDENTITY_LEN: usize = 32;

/// Bytes of the name a fitted identity keeps before its `~` and hash.
const KEPT: usize = MAX_IDENTITY_LEN - 1 - 8;

/// `name` as a `user_identity` of at most 32 bytes: unchanged if it fits; otherwise its
/// first 23 bytes (fewer, to end on a character boundary), `~`, and the first 4 bytes of
/// the name's double SHA-256 in hex, so that two long names with the same beginning stay
/// apart: `bc1qxy2kgdygjrsqtzq2n0yrf2493p83~1f0ca8e2`-like names of at most 32 bytes.
pub(crate) fn fit(name: &str) -> String {
    if name.len() <= MAX_IDENTITY_LEN {
        return name.to_owned();
    }
    let mut end = KEPT;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let hash = sha256d(name.as_bytes());
    format!("{}~{}", &name[..end], hex::encode(&hash[..4]))
}

/// The 0x0002 TLV for `name` (fitted), or `None` for an empty name.
pub(crate) fn tlv(name: &str) -> Option<TlvBuf> {
    if name.is_empty() {
        return None;
    }
    let fitted = fit(name);
    UserIdentity::new(fitted.as_bytes())
        .ok()
        .map(|u| u.to_tlv().to_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_stay_and_long_ones_fit() {
        assert_eq!(fit("acct.rig1"), "acct.rig1");
        let exact = "a".repeat(32);
        assert_eq!(fit(&exact), exact);
        let long = format!("bc1q{}.rig-01", "x".repeat(60));
        let fitted = fit(&long);
        assert_eq!(fitted.len(), 32);
        assert!(fitted.starts_with(&long[..23]) && fitted.as_bytes()[23] == b'~');
        let other = format!("bc1q{}.rig-02", "x".repeat(60));
        assert_ne!(fit(&other), fitted);
        // A multi-byte character across the cut is not split.
        let accents = "é".repeat(40);
        let fitted = fit(&accents);
        assert!(fitted.len() <= 32 && fitted.starts_with("ééé"));
        assert!(tlv(&long).is_some() && tlv("").is_none());
    }
}
