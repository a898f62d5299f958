#!/usr/bin/env bash
# SRI's programs used by the interop tests: pool_sv2 0.7.0 and jd_client_sv2 0.6.0 (their
# builds need the Cap'n Proto compiler and schemas: Debian's capnproto, libcapnp-dev) and
# translator_sv2 0.6.0. Sourced by the steps that need them; exports POOL_SV2,
# TRANSLATOR_SV2 and JD_CLIENT_SV2, the paths the tests run (roles/tests/sri/mod.rs).
#
# A program installed with `cargo install` (in $CARGO_HOME/bin: the command the tests
# print when it is missing) is used as it is. Otherwise all three are built here with the
# dev profile, in one target directory (the dependencies they share are compiled once),
# into a cache outside the clone, where the next run finds them. They are peers for
# functional tests, not the subject of a measurement (BENCHMARKS.md's comparisons use a
# release install): an unoptimised build passes the interop tests as a release one does
# and costs a third of the CPU. Measured on the 2-core machine, one after the other, the
# first two from a cold target directory: 148 s wall, 209 s of CPU with the dev profile;
# 352 s wall, 639 s of CPU with a release profile without LTO. jd_client_sv2 after them,
# in the same target directory: 47 s wall, 19 s of CPU more (the machine shared with
# another build; pool_sv2 and translator_sv2 took 306 s wall, 182 s of CPU in that run).
# Alone, from a cold target directory (a cache that already holds the other two, once):
# 185 s wall.
bin="${CARGO_HOME:-$HOME/.cargo}/bin"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/sv2c-ci/sri-dev"
sri_program() { # name version
  if [ -x "$bin/$1" ]; then
    echo "$bin/$1"
    return
  fi
  if [ ! -x "$cache/bin/$1" ]; then
    if { [ "$1" = pool_sv2 ] || [ "$1" = jd_client_sv2 ]; } &&
      { ! command -v capnp >/dev/null 2>&1 || [ ! -f /usr/include/capnp/c++.capnp ]; }; then
      { apt-get update -qq && apt-get install -y -qq capnproto libcapnp-dev; } >&2 || return 1
    fi
    CARGO_TARGET_DIR="$cache/target" CARGO_PROFILE_DEV_DEBUG=0 CARGO_INCREMENTAL=0 \
      cargo install --debug --locked --no-default-features --root "$cache" "$1" \
      --version "$2" >&2 || return 1
  fi
  echo "$cache/bin/$1"
}
POOL_SV2=$(sri_program pool_sv2 0.7.0)
TRANSLATOR_SV2=$(sri_program translator_sv2 0.6.0)
JD_CLIENT_SV2=$(sri_program jd_client_sv2 0.6.0)
rm -rf "$cache/target"
export POOL_SV2 TRANSLATOR_SV2 JD_CLIENT_SV2
echo "SRI programs: $POOL_SV2, $TRANSLATOR_SV2, $JD_CLIENT_SV2"
