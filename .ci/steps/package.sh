#!/usr/bin/env bash
# The eight published packages: each must build from its own tarball (`cargo package` with
# verification), and each must build with the declared MSRV, Rust 1.85, with its features
# (the tests and dev-dependencies may need a newer toolchain; only the libraries are held
# to 1.85).
# Measured (`time .ci/steps/package.sh`) on the 2-core machine shared with four other
# builds (load average 6-9): 12 min 29 s wall, 4 min 51 s of CPU; the verification build
# of the six tarballs 2 min 20 s, the cold 1.85 check (ring and libsecp256k1 built from C)
# 10 min 06 s. Both builds start cold whatever target/ holds (their own target dirs).
set -euo pipefail
cd "$(dirname "$0")/../.."

export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=0

published=(sv2c-buffer-pool sv2c-derive sv2c-binary sv2c-noise sv2c-codec sv2c-channels sv2c-sv1 sv2c)
args=()
for p in "${published[@]}"; do args+=(-p "$p"); done

# What goes into each tarball: the library, its README and the two licenses; no golden
# vectors, no test reading them. Fails if a package holds tests-data or a file over 1 MiB.
for p in "${published[@]}"; do
  list=$(cargo package --list --allow-dirty -p "$p")
  if grep -q 'tests-data' <<<"$list"; then
    echo "package $p includes tests-data:" >&2
    grep 'tests-data' <<<"$list" >&2
    exit 1
  fi
  for f in LICENSE-MIT LICENSE-APACHE README.md; do
    grep -qx "$f" <<<"$list" || { echo "package $p lacks $f" >&2; exit 1; }
  done
done

# Packages the six together (cargo resolves their dependencies on one another through a
# local overlay of the new tarballs) and builds each from its tarball. `--allow-dirty`:
# earlier CI steps write files (fuzz corpora, target/); what a package holds is set by
# its `include` list, which the check above looks at.
# Cargo verifies each package against the others through a temporary registry under
# target/package, and extracts them into $CARGO_HOME/registry/src/<that registry's hash>/.
# The hash depends only on the path, so a copy extracted by an earlier run on this machine
# (older sources, same version) would be used instead of the new one: remove them first.
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/sv2c-*-[0-9]* \
       "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/sv2c-*-[0-9]*.crate
# Registry crates are fingerprinted by name and version, not content: a verification
# build left in target/package by an interrupted run would be reused as well.
rm -rf target/package
cargo package --allow-dirty "${args[@]}"
ls -l target/package/*.crate
rm -rf target/package

# The MSRV check, in its own target directory (1.85's artifacts are of no use to the rest).
if ! rustup toolchain list | grep -q '^1\.85'; then
  rustup toolchain install 1.85 --profile minimal
fi
CARGO_TARGET_DIR=target/msrv cargo +1.85 check "${args[@]}" --all-features
rm -rf target/msrv
