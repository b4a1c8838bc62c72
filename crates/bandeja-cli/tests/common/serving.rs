//! `bandeja serve` as a real process: started on a free loopback port with `--json`, read
//! for the address it prints, and killed when the test ends, however it ends.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStderr, Stdio};

use super::{command, runtime};

/// A running `bandeja serve`, killed on drop.
pub(crate) struct Serving {
    child: Child,
    stderr: Option<ChildStderr>,
    /// The line it printed on start (`listen`, `dashboard_url`, `token_generated`).
    pub(crate) listening: serde_json::Value,
    /// Where it listens: `127.0.0.1:<port>`.
    pub(crate) addr: String,
}

impl Serving {
    /// `bandeja serve --listen 127.0.0.1:0 --json <args>` with the variables `env` (see
    /// [`command`] for what it does not inherit), its stderr passed through; returns once
    /// it printed where it listens and answered `GET /health`.
    pub(crate) fn start(args: &[&str], env: &[(&str, &str)]) -> Serving {
        Serving::spawn(args, env, Stdio::inherit())
    }

    /// [`Serving::start`] with its stderr kept, for [`Serving::stop`] to return.
    pub(crate) fn capturing_stderr(args: &[&str], env: &[(&str, &str)]) -> Serving {
        Serving::spawn(args, env, Stdio::piped())
    }

    fn spawn(args: &[&str], env: &[(&str, &str)], stderr: Stdio) -> Serving {
        let all = [&["serve", "--listen", "127.0.0.1:0", "--json"][..], args].concat();
        let mut child = command(&all, env)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start bandeja serve");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take();
        // Owned before anything can panic: dropped, it kills the process.
        let mut serving = Serving {
            child,
            stderr,
            listening: serde_json::Value::Null,
            addr: String::new(),
        };
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the first line");
        serving.listening = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        serving.addr = serving.listening["listen"]
            .as_str()
            .expect("listen")
            .to_owned();
        // Answered: the server runs (and has logged that it listens).
        serving.get("/health");
        serving
    }

    /// `http://<addr><path>`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// `GET <path>`: the status code and the body.
    pub(crate) fn get(&self, path: &str) -> (u16, String) {
        let url = self.url(path);
        runtime().block_on(async move {
            let reply = reqwest::get(&url).await.expect("GET");
            let status = reply.status().as_u16();
            (status, reply.text().await.expect("body"))
        })
    }

    /// Stops the server and returns what it wrote on stderr (empty unless
    /// [`Serving::capturing_stderr`] started it).
    pub(crate) fn stop(mut self) -> String {
        self.kill();
        let mut text = String::new();
        if let Some(mut stderr) = self.stderr.take() {
            stderr.read_to_string(&mut text).expect("read stderr");
        }
        text
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.kill();
    }
}
