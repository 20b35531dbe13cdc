//! Driving a USI engine process over pipes: start it (`usi`/`usiok`), set options, wait
//! for `readyok`, ask for moves, and quit or kill it.

use std::fmt;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// An engine's answer to `go`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BestMove {
    Move(String),
    Resign,
    Win,
}

#[derive(Debug)]
pub enum ClientError {
    /// No answer in time.
    Timeout(String),
    /// The process closed its output or could not be written to.
    Exited(String),
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Timeout(m) => write!(f, "timeout: {m}"),
            ClientError::Exited(m) => write!(f, "engine gone: {m}"),
        }
    }
}

/// Splits an engine command line; `self` is this program with `usi`.
pub fn engine_argv(cmd: &str) -> Result<Vec<String>, String> {
    if cmd.trim() == "self" {
        let exe = std::env::current_exe().map_err(|e| format!("finding the keima binary: {e}"))?;
        return Ok(vec![exe.to_string_lossy().into_owned(), "usi".to_string()]);
    }
    let argv: Vec<String> = cmd.split_whitespace().map(str::to_string).collect();
    if argv.is_empty() {
        return Err("empty engine command".to_string());
    }
    Ok(argv)
}

/// `from + timeout`, or a year from `from` when the sum is not representable (a huge
/// --timeout or --time-margin must not panic).
fn deadline_after(from: Instant, timeout: Duration) -> Instant {
    from.checked_add(timeout).unwrap_or_else(|| from + Duration::from_secs(365 * 86_400))
}

pub struct UsiClient {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// `id name` (or the command if the engine sent none).
    pub name: String,
    /// The options the engine listed after `usi` (`option name X ...`), by name.
    pub option_names: Vec<String>,
    label: String,
}

impl UsiClient {
    /// Starts the engine, performs `usi`/`usiok`, and sends the options.
    pub fn start(
        argv: &[String],
        options: &[(String, String)],
        timeout: Duration,
    ) -> Result<UsiClient, String> {
        let label = argv.join(" ");
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting engine {label:?}: {e}"))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let stdin = child.stdin.take();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match reader.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&buf).trim().to_string();
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let mut client =
            UsiClient { child, stdin, lines: rx, name: label.clone(), option_names: Vec::new(), label };
        client.send("usi").map_err(|e| e.to_string())?;
        let deadline = deadline_after(Instant::now(), timeout);
        loop {
            let line = client.next_line(deadline, "usiok").map_err(|e| format!("{}: {e}", client.label))?;
            if let Some(name) = line.strip_prefix("id name ") {
                client.name = name.trim().to_string();
            } else if let Some(rest) = line.strip_prefix("option name ") {
                // Names may hold spaces: the name ends where ` type ` begins.
                let name = rest.split(" type ").next().unwrap_or(rest).trim();
                client.option_names.push(name.to_string());
            } else if line == "usiok" {
                break;
            }
        }
        for (name, value) in options {
            client.send(&format!("setoption name {name} value {value}")).map_err(|e| e.to_string())?;
        }
        Ok(client)
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    pub fn send(&mut self, line: &str) -> Result<(), ClientError> {
        let stdin = self.stdin.as_mut().ok_or_else(|| ClientError::Exited("stdin closed".to_string()))?;
        writeln!(stdin, "{line}")
            .and_then(|_| stdin.flush())
            .map_err(|e| ClientError::Exited(format!("writing {line:?}: {e}")))
    }

    fn next_line(&mut self, deadline: Instant, waiting_for: &str) -> Result<String, ClientError> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(line) => Ok(line),
            Err(RecvTimeoutError::Timeout) => Err(ClientError::Timeout(format!("no {waiting_for}"))),
            Err(RecvTimeoutError::Disconnected) => {
                Err(ClientError::Exited(format!("output closed while waiting for {waiting_for}")))
            }
        }
    }

    /// `isready` → `readyok`.
    pub fn isready(&mut self, timeout: Duration) -> Result<(), ClientError> {
        self.send("isready")?;
        let deadline = deadline_after(Instant::now(), timeout);
        while self.next_line(deadline, "readyok")? != "readyok" {}
        Ok(())
    }

    /// Sends `position` and `go`, waits for `bestmove`. On timeout sends `stop` and gives
    /// the engine another second, but still reports the timeout.
    pub fn go(
        &mut self,
        position: &str,
        go: &str,
        timeout: Duration,
    ) -> Result<(BestMove, Duration), ClientError> {
        self.send(position)?;
        self.send(go)?;
        let start = Instant::now();
        let deadline = deadline_after(start, timeout);
        loop {
            match self.next_line(deadline, "bestmove") {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix("bestmove") {
                        let word = rest.split_whitespace().next().unwrap_or("");
                        let bm = match word {
                            "resign" => BestMove::Resign,
                            "win" => BestMove::Win,
                            other => BestMove::Move(other.to_string()),
                        };
                        return Ok((bm, start.elapsed()));
                    }
                }
                Err(ClientError::Timeout(m)) => {
                    let _ = self.send("stop");
                    let grace = Instant::now() + Duration::from_secs(1);
                    while let Ok(line) = self.next_line(grace, "bestmove") {
                        if line.starts_with("bestmove") {
                            break;
                        }
                    }
                    return Err(ClientError::Timeout(format!("{m} within {} ms", timeout.as_millis())));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Sends `quit`, waits up to two seconds for the process to end, then kills it.
    pub fn quit(mut self) {
        let _ = self.send("quit");
        self.stdin = None;
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // Drop kills it.
    }
}

impl Drop for UsiClient {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}
