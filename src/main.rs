//! The `imgcheck` command line: parses the arguments and hands each command to its module in
//! [`cli`]; the work is in the `imgcheck` library.

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

mod cli;

use cli::exit::ExitKind;
use cli::{Cli, CliError, Command};

/// mimalloc serves the program's allocations: a batch makes dozens of small ones per request,
/// where glibc's malloc spent a sixth of the CPU. Built without asking for transparent huge
/// pages, which cost most of its extra memory (issue 24, docs/decisions.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Runs the command.
async fn run(cli: Cli) -> Result<ExitKind, CliError> {
    let global = &cli.global;
    match &cli.command {
        Command::Verify(args) => cli::verify::run(global, args).await,
        Command::Resolve(args) => cli::resolve::run(global, args).await,
        Command::Inspect(args) => cli::inspect::run(global, args).await,
        Command::Assemble(args) => cli::assemble::run(global, args).await,
        Command::MirrorCheck(args) => cli::mirror_check::run(global, args).await,
        Command::Build(args) => cli::build::run(global, args).await,
        Command::Policy { command } => cli::policy::run(command),
        Command::Completion(args) => cli::generate::completion(args, Cli::command()),
        Command::Man(args) => cli::generate::man(args, Cli::command()),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    cli::verbose::install(cli.global.verbose);
    // One thread: imgcheck waits on the network; a second worker only added cross-thread
    // wake-ups (measured in scripts/bench, docs/decisions.md). CPU-heavy work (layer
    // decompression) goes to the blocking pool.
    let ended = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)
        .and_then(|runtime| runtime.block_on(run(cli)));
    let kind = ended.unwrap_or_else(|e| {
        cli::output::print_error(&e);
        ExitKind::of_error(&e)
    });
    ExitCode::from(kind.code())
}

#[cfg(test)]
mod tests {
    /// glibc's `struct mallinfo2` (`malloc.h`): ten counts of what its malloc holds, in bytes.
    #[repr(C)]
    struct MallInfo2 {
        /// `arena`, `ordblks`, `smblks`, `hblks`.
        _before: [usize; 4],
        /// Bytes in blocks glibc mapped with `mmap` (the large ones).
        hblkhd: usize,
        /// `usmblks`, `fsmblks`, `uordblks`, `fordblks`, `keepcost`.
        _after: [usize; 5],
    }

    unsafe extern "C" {
        /// glibc 2.33 and later.
        fn mallinfo2() -> MallInfo2;
    }

    /// The program's allocations go to mimalloc, not to glibc's malloc: a 64 MiB block, which
    /// glibc would map on its own, leaves glibc's counts as they were.
    #[test]
    fn allocations_bypass_glibc_malloc() {
        // SAFETY: `mallinfo2` only reads glibc's statistics.
        let before = unsafe { mallinfo2() };
        let block = vec![1u8; 64 << 20];
        // SAFETY: as above.
        let during = unsafe { mallinfo2() };
        assert_eq!(
            block.iter().map(|b| usize::from(*b)).sum::<usize>(),
            64 << 20
        );
        assert!(
            during.hblkhd < before.hblkhd + (64 << 20),
            "glibc mapped {} bytes more: the block came from glibc's malloc",
            during.hblkhd - before.hblkhd
        );
    }

    /// mimalloc never asks for transparent huge pages (built with `no_thp`): with them, a
    /// 200,000-reference batch peaked 6 MiB higher. Under the kernel's `madvise` setting (this
    /// project's machines) a 64 MiB block touched whole then lies in no huge page; under
    /// `always` the kernel backs aligned memory whatever a program asks, under `never` it backs
    /// none: the settings are told apart, and only `madvise` says what the build controls.
    #[test]
    fn allocations_ask_for_no_huge_pages() {
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_else(|e| panic!("reading the kernel's THP setting: {e}"));
        let chosen = ["always", "madvise", "never"]
            .into_iter()
            .find(|m| mode.contains(&format!("[{m}]")))
            .unwrap_or_else(|| panic!("unknown THP setting: {mode:?}"));
        let mut block = vec![0u8; 64 << 20];
        for page in block.chunks_mut(4096) {
            page[0] = 1;
        }
        let rollup = std::fs::read_to_string("/proc/self/smaps_rollup")
            .unwrap_or_else(|e| panic!("reading /proc/self/smaps_rollup: {e}"));
        let huge_kib: u64 = rollup
            .lines()
            .find_map(|l| l.strip_prefix("AnonHugePages:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no AnonHugePages line in {rollup}"));
        assert_eq!(block.iter().filter(|b| **b == 1).count(), 16 << 10);
        if chosen == "madvise" {
            assert_eq!(huge_kib, 0, "{huge_kib} KiB of huge pages under `madvise`");
        }
    }
}
