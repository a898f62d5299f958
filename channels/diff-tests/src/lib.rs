//! Differential tests of `sv2c-channels` against `channels_sv2` 8.0.0: see `tests/`.
