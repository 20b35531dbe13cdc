//! `keima usi` as a process: a GUI-like transcript over pipes.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use engine_core::rules::Position;

struct Engine {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Engine {
    fn start() -> Engine {
        let mut child = Command::new(env!("CARGO_BIN_EXE_keima"))
            .arg("usi")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start keima usi");
        let stdout = child.stdout.take().unwrap();
        let stdin = child.stdin.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Engine { child, stdin, lines }
    }

    fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Lines up to and including the first that starts with `prefix`.
    fn until(&mut self, prefix: &str, timeout: Duration) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("waiting for {prefix:?} ({e}); got {seen:#?}"));
            let done = line.starts_with(prefix);
            seen.push(line);
            if done {
                return seen;
            }
        }
    }
}

fn position_after(cmd: &str) -> Position {
    let rest = cmd.strip_prefix("position ").unwrap();
    let (setup, moves) = rest.split_once(" moves ").unwrap_or((rest, ""));
    let mut pos = Position::from_sfen(setup).unwrap();
    for m in moves.split_whitespace() {
        let mv = pos.parse_usi_move(m).unwrap();
        pos.do_move(mv);
    }
    pos
}

fn assert_legal_bestmove(lines: &[String], position_cmd: &str) {
    let last = lines.last().unwrap();
    let mv = last.strip_prefix("bestmove ").unwrap_or_else(|| panic!("{last}"));
    let mv = mv.split_whitespace().next().unwrap();
    let pos = position_after(position_cmd);
    assert!(pos.parse_usi_move(mv).is_ok(), "illegal bestmove {mv} in {position_cmd}");
}

const MIDDLE_GAME: &str = "position startpos moves 7g7f 8c8d 7i6h 3c3d 6g6f 7a6b 5g5f 5c5d 3i4h 3a4b 4i5h 4a3b \
                           6i7h 5a4a 5i6i 7c7d 5h6g 6b5c 2g2f 8d8e 6h7g 5d5e 5f5e 2b5e";

#[test]
fn usi_transcript() {
    let mut e = Engine::start();
    let t = Duration::from_secs(10);
    e.send("usi");
    let lines = e.until("usiok", t);
    assert!(lines.iter().any(|l| l.starts_with("id name ")), "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("option name Hash ")), "{lines:?}");
    e.send("setoption name Hash value 16");
    e.send("isready");
    e.until("readyok", t);
    e.send("usinewgame");

    let pos = "position startpos moves 7g7f 3c3d";
    e.send(pos);
    e.send("go depth 3");
    let lines = e.until("bestmove", t);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("info depth 3 ") && l.contains(" score cp ") && l.contains(" pv "))
    );
    assert_legal_bestmove(&lines, pos);

    // 100 ms byoyomi from a middle-game position: the answer comes in time.
    e.send(MIDDLE_GAME);
    let start = Instant::now();
    e.send("go btime 0 wtime 0 byoyomi 100");
    let lines = e.until("bestmove", t);
    let took = start.elapsed();
    assert!(took < Duration::from_millis(1000), "byoyomi 100 took {took:?}");
    assert_legal_bestmove(&lines, MIDDLE_GAME);

    // Infinite: no bestmove before stop, one after.
    e.send("go infinite");
    std::thread::sleep(Duration::from_millis(150));
    e.send("isready");
    let lines = e.until("readyok", t);
    assert!(!lines.iter().any(|l| l.starts_with("bestmove")), "{lines:?}");
    e.send("stop");
    let lines = e.until("bestmove", t);
    assert_legal_bestmove(&lines, MIDDLE_GAME);

    // An illegal move: an error line, no crash, the previous position is kept.
    e.send("position startpos moves 7g7f 7g7f");
    let lines = e.until("info string", t);
    assert!(lines.last().unwrap().contains("error"), "{lines:?}");
    e.send("go depth 1");
    let lines = e.until("bestmove", t);
    assert_legal_bestmove(&lines, MIDDLE_GAME);

    e.send("gameover win");
    e.send("quit");
    let deadline = Instant::now() + t;
    let status = loop {
        if let Some(s) = e.child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "keima usi did not exit after quit");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status:?}");
}
