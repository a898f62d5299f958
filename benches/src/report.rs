//! Report files: the allocation counts the suites write next to criterion's output, which
//! `scripts/bench_tables.py allocs` prints as tables.

use std::fmt::Write as _;
use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

/// Where reports go: `$SV2C_BENCH_REPORTS` if set, else `sv2c-bench-reports/` in the
/// cargo target directory (`$CARGO_TARGET_DIR`, or the workspace's `target/`), beside
/// criterion's `criterion/` folder.
///
/// A relative `CARGO_TARGET_DIR` is taken relative to the workspace root (cargo runs
/// benchmarks from the package folder, so the invocation's directory is not known here).
pub fn report_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SV2C_BENCH_REPORTS") {
        return PathBuf::from(dir);
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                workspace.join(dir)
            }
        }
        None => workspace.join("target"),
    };
    target.join("sv2c-bench-reports")
}

/// `true` when the binary was started by `cargo bench` (criterion's measuring mode), as
/// opposed to `cargo test --benches` (each benchmark run once, nothing measured).
pub fn is_bench_run() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// A table of results, written as CSV and as a Markdown table.
#[derive(Debug, Clone)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with these column names.
    pub fn new(headers: &[&str]) -> Self {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row (as many cells as columns).
    pub fn push(&mut self, row: Vec<String>) {
        debug_assert_eq!(row.len(), self.headers.len());
        self.rows.push(row);
    }

    /// The rows added so far.
    pub fn rows(&self) -> &[Vec<String>] {
        &self.rows
    }

    /// The table as CSV (cells must not contain commas or quotes; ours never do).
    pub fn to_csv(&self) -> String {
        let mut out = self.headers.join(",");
        out.push('\n');
        for row in &self.rows {
            out.push_str(&row.join(","));
            out.push('\n');
        }
        out
    }

    /// The table as GitHub Markdown.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "| {} |", self.headers.join(" | "));
        let _ = writeln!(
            out,
            "|{}",
            self.headers.iter().map(|_| "---|").collect::<String>()
        );
        for row in &self.rows {
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
        out
    }

    /// Writes `<dir>/<stem>.csv` and `<dir>/<stem>.md`, creating `dir` if needed.
    ///
    /// # Errors
    /// Any I/O error.
    pub fn write(&self, dir: &Path, stem: &str) -> io::Result<()> {
        fs::create_dir_all(dir)?;
        fs::write(dir.join(format!("{stem}.csv")), self.to_csv())?;
        fs::write(dir.join(format!("{stem}.md")), self.to_markdown())
    }
}

/// Writes `table` as `<report_dir>/<stem>.{csv,md}` when measuring (`cargo bench`), and
/// prints it in every mode. Under `cargo test --benches` nothing is written, so a test
/// run never replaces the reports of a real one.
pub fn emit(table: &Table, stem: &str, title: &str) {
    println!("\n{title}\n{}", table.to_markdown());
    if is_bench_run() {
        let dir = report_dir();
        match table.write(&dir, stem) {
            Ok(()) => println!("written: {}", dir.join(format!("{stem}.csv")).display()),
            Err(e) => eprintln!("cannot write {stem} into {}: {e}", dir.display()),
        }
    }
}

/// A number with `digits` decimals, without a trailing `.0…` for whole numbers.
pub fn num(v: f64, digits: usize) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.digits$}")
    }
}

/// Records how a suite was run by appending a record to
/// `<report_dir>/<bench>_meta[_<baseline>].txt` (`key=value` lines: the clock, the
/// command-line arguments and the load average at the start; records are separated by
/// blank lines), when measuring.
pub fn write_meta(bench: &str, clock: crate::clock::ClockKind) {
    if !is_bench_run() || filtered_to_other_suite(bench) {
        return;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    // The load when the run started: the machine may be shared with other jobs.
    let load = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let text = format!(
        "bench={bench}\nclock={}\nargs={}\nloadavg={}\n",
        clock.name(),
        args.join(" "),
        load.trim()
    );
    // One file per criterion baseline, so that repeated runs (`--save-baseline run2`)
    // each keep their record.
    let baseline = args
        .iter()
        .position(|a| a == "--save-baseline")
        .and_then(|i| args.get(i + 1))
        .map(|b| format!("_{b}"))
        .unwrap_or_default();
    let name = format!("{bench}_meta{baseline}.txt");
    let dir = report_dir();
    let appended = fs::create_dir_all(&dir).and_then(|()| {
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(&name))?;
        writeln!(f, "\n{text}")
    });
    if let Err(e) = appended {
        eprintln!("cannot write {name} into {}: {e}", dir.display());
    }
}

/// The criterion settings both suites use (30 samples, 0.5 s warm-up, 1 s of measurement,
/// the clock chosen by `SV2C_BENCH_CLOCK`), after recording how `bench` is run
/// ([`write_meta`]).
pub fn criterion_config(bench: &str) -> criterion::Criterion<crate::clock::BenchClock> {
    let clock = crate::clock::BenchClock::from_env();
    write_meta(bench, clock.kind());
    criterion::Criterion::default()
        .with_measurement(clock)
        .sample_size(30)
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(1))
}

/// The criterion suites of this crate; every benchmark id of a suite starts with its name.
pub const SUITES: &[&str] = &["pool_lifecycle", "vs_sri", "enum_path", "stream"];

/// Criterion options that take a value (so that the value is not taken for a filter).
const VALUE_FLAGS: &[&str] = &[
    "--save-baseline",
    "--baseline",
    "--baseline-lenient",
    "--load-baseline",
    "--sample-size",
    "--warm-up-time",
    "--measurement-time",
    "--nresamples",
    "--noise-threshold",
    "--confidence-level",
    "--significance-level",
    "--output-format",
    "--color",
    "--plotting-backend",
    "--profile-time",
    "--format",
    "--logfile",
];

/// `true` when the command line's filter names another suite of [`SUITES`] and not
/// `bench`: `cargo bench pool_lifecycle` at the workspace root passes `pool_lifecycle` to
/// every bench target, and the other suites then skip their own (non-criterion)
/// allocation tables and run records, so that nothing but the named suite is measured.
pub fn filtered_to_other_suite(bench: &str) -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    names_other_suite(bench, &args)
}

/// The benchmark filters on the command line (criterion's positional arguments): a
/// benchmark runs if its id contains one of them, or if there are none.
pub fn filters() -> Vec<String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    filter_args(&args).into_iter().map(str::to_owned).collect()
}

fn filter_args(args: &[String]) -> Vec<&str> {
    let mut filters = Vec::new();
    let mut skip_value = false;
    for a in args {
        if skip_value {
            skip_value = false;
        } else if a.starts_with('-') {
            skip_value = VALUE_FLAGS.contains(&a.as_str());
        } else {
            filters.push(a.as_str());
        }
    }
    filters
}

fn names_other_suite(bench: &str, args: &[String]) -> bool {
    let filters = filter_args(args);
    !filters.is_empty()
        && filters
            .iter()
            .all(|f| !f.contains(bench) && SUITES.iter().any(|s| *s != bench && f.contains(s)))
}

#[cfg(test)]
mod filter_tests {
    use super::names_other_suite;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_a_filter_naming_another_suite_skips() {
        let root = args(&["pool_lifecycle", "--bench"]);
        assert!(names_other_suite("vs_sri", &root));
        assert!(!names_other_suite("pool_lifecycle", &root));
        assert!(!names_other_suite("vs_sri", &args(&["--bench"])));
        assert!(!names_other_suite(
            "vs_sri",
            &args(&["--bench", "SetupConnection"])
        ));
        let baseline = args(&["--bench", "--save-baseline", "pool_lifecycle_run1"]);
        assert!(!names_other_suite("vs_sri", &baseline));
        assert!(names_other_suite(
            "pool_lifecycle",
            &args(&["vs_sri/NewTemplate", "--bench"])
        ));
    }
}
