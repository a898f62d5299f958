//! The command line of `template_provider`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use bitcoin::Target;

pub(crate) const USAGE: &str = "usage:
  template_provider [--listen HOST:PORT] [--noise] [--authority-secret-file FILE]
                    [--block-interval SECONDS] [--nbits HEX | --difficulty-bits N]
                    [--transactions N]
      a Template Provider on a made-up chain until Ctrl-C; default listen address
      127.0.0.1:8442. --noise: clients must use Noise NX; the authority secret is read
      from FILE (64 hex digits) or generated, and its public key printed.
      --block-interval: the tip moves every SECONDS (default 30; 0: only with our blocks).
      --nbits: the network target in compact form (default 207fffff, regtest's);
      --difficulty-bits N: a target with N leading zero bits instead.
      --transactions: synthetic transactions per template (default 4, at most 4000).
      One line per block submitted on stdout: `template_provider: block accepted HASH`
      or `template_provider: block refused: REASON`.";

/// Transactions a template may hold: about 3 M weight units of synthetic transactions
/// (436 to 760 each), so that a block stays under the 4 M limit.
pub(crate) const MAX_TRANSACTIONS: usize = 4_000;

/// The program's options.
#[derive(Debug, PartialEq)]
pub(crate) struct Args {
    pub(crate) listen: SocketAddr,
    pub(crate) noise: bool,
    pub(crate) secret_file: Option<PathBuf>,
    pub(crate) block_interval: Option<Duration>,
    pub(crate) nbits: u32,
    pub(crate) transactions: usize,
}

pub(crate) fn parse(args: &[String]) -> Result<Args, String> {
    let mut out = Args {
        listen: SocketAddr::from(([127, 0, 0, 1], 8442)),
        noise: false,
        secret_file: None,
        block_interval: Some(Duration::from_secs(30)),
        nbits: 0x207f_ffff,
        transactions: 4,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .map(String::as_str)
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--listen" => {
                let v = value()?;
                out.listen = v.parse().map_err(|e| format!("--listen {v}: {e}"))?;
            }
            "--noise" => out.noise = true,
            "--authority-secret-file" => {
                out.secret_file = Some(PathBuf::from(value()?));
                out.noise = true;
            }
            "--block-interval" => {
                let v = value()?;
                let secs: f64 = v
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                    .ok_or_else(|| format!("--block-interval {v}: expected seconds"))?;
                out.block_interval = (secs > 0.0).then(|| Duration::from_secs_f64(secs));
            }
            "--nbits" => {
                let v = value()?;
                out.nbits = u32::from_str_radix(v.trim_start_matches("0x"), 16)
                    .map_err(|e| format!("--nbits {v}: {e}"))?;
            }
            "--difficulty-bits" => {
                let v = value()?;
                let bits: u32 = v
                    .parse()
                    .ok()
                    .filter(|b| (1..=255).contains(b))
                    .ok_or_else(|| format!("--difficulty-bits {v}: expected 1 to 255"))?;
                out.nbits = nbits_for_leading_zeros(bits);
            }
            "--transactions" => {
                let v = value()?;
                out.transactions = v
                    .parse()
                    .ok()
                    .filter(|n| *n <= MAX_TRANSACTIONS)
                    .ok_or_else(|| {
                        format!("--transactions {v}: expected 0 to {MAX_TRANSACTIONS}")
                    })?;
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(out)
}

/// The compact form of the target with `bits` leading zero bits (rounded down by the
/// compact form's 3-byte mantissa).
pub(crate) fn nbits_for_leading_zeros(bits: u32) -> u32 {
    let mut be = [0xffu8; 32];
    for (i, byte) in be.iter_mut().enumerate() {
        let bit = (i as u32) * 8;
        if bit + 8 <= bits {
            *byte = 0;
        } else if bit < bits {
            *byte = 0xff >> (bits - bit);
        }
    }
    Target::from_be_bytes(be).to_compact_lossy().to_consensus()
}
