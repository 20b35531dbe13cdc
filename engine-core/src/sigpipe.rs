//! SIGPIPE's default action, for programs that only print (`keima bench | head -1`).
//!
//! Rust starts programs with SIGPIPE ignored, so a write to a closed pipe fails with
//! `BrokenPipe`, and `println!` turns that failure into a panic. Unix tools instead end
//! quietly, killed by SIGPIPE. The binary decides which of its commands take that default
//! back (those that write to child processes must not); this module only holds the
//! `unsafe` call, so that crates without `unsafe` can make it.

/// Restores the default SIGPIPE action: the process ends quietly, killed by the signal,
/// when it writes to a pipe whose reader has gone.
pub fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: `signal` only sets this process's disposition of SIGPIPE back to the
    // default, with constants from libc; no handler is installed, so nothing runs in
    // signal context. Covered by `printing_into_a_closed_pipe_ends_quietly` in
    // `cli/tests/cli.rs`.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
