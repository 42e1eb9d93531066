//! Signals and containment for subcommands that host extensions (`call`,
//! and the long-running `serve` and `lock`): a small API any of them can
//! use.
//!
//! ```text
//! let mut guard = signals::Supervisor::install()?;   // subreaper + handlers
//! let outcome = guard.run(work).await;               // None: SIGINT/SIGTERM came
//! let disposed = guard.dispose(host.dispose()).await; // None: forced by a signal
//! if let Some(code) = guard.exit_code() { ... }       // 130 or 143
//! ```
//!
//! * [`Supervisor::install`] makes the process a child subreaper (Linux),
//!   so descendants that leave their server's process group (`setsid`)
//!   are reparented to it, and installs SIGINT and SIGTERM handlers (from
//!   then on neither signal ends the process by itself).
//! * [`Supervisor::run`] runs the subcommand's work until it finishes or
//!   the first SIGINT or SIGTERM arrives (the work is then dropped).
//! * [`Supervisor::dispose`] runs the host's `dispose` (always call it,
//!   interrupted or not); once two signals have arrived in all (the one
//!   that interrupted `run` counts), it kills the process group of every
//!   hosted server and every adopted orphan at once and returns `None`.
//!   After `dispose` it kills the orphans that escaped their server's group
//!   (`exthost::process::containment`).
//! * [`Supervisor::exit_code`] is 130 after SIGINT, 143 after SIGTERM.

use std::future::Future;

use exthost::process::containment;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// The signal state of one subcommand run. See the module documentation.
#[derive(Debug)]
pub struct Supervisor {
    interrupt: Signal,
    terminate: Signal,
    /// The first signal received (2 or 15), if any.
    first: Option<i32>,
    /// Signals received so far.
    count: u32,
    /// One signal in all is enough to cut `dispose` short.
    urgent: bool,
}

impl Supervisor {
    /// Becomes a child subreaper (Linux; ignored where unsupported) and
    /// installs the SIGINT and SIGTERM handlers. Needs a tokio runtime with
    /// the I/O driver enabled.
    pub fn install() -> std::io::Result<Self> {
        let _ = containment::become_subreaper();
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            first: None,
            count: 0,
            urgent: false,
        })
    }

    async fn next_signal(&mut self) -> i32 {
        let number = tokio::select! {
            _ = self.interrupt.recv() => 2,
            _ = self.terminate.recv() => 15,
        };
        self.first.get_or_insert(number);
        self.count += 1;
        number
    }

    /// Runs `work` to its end, or until SIGINT or SIGTERM: then `None`
    /// (and `work` is dropped).
    pub async fn run<F: Future>(&mut self, work: F) -> Option<F::Output> {
        if self.count > 0 {
            return None;
        }
        tokio::select! {
            out = work => Some(out),
            _ = self.next_signal() => None,
        }
    }

    /// Runs `dispose`; if the signals received reach two while it runs, the
    /// process group of every hosted server is killed and `None` returned
    /// at once. Then kills the orphans adopted from hosted servers.
    pub async fn dispose<F: Future>(&mut self, dispose: F) -> Option<F::Output> {
        let mut dispose = std::pin::pin!(dispose);
        let out = loop {
            if self.count >= 2 || (self.urgent && self.count >= 1) {
                containment::kill_all_extensions();
                break None;
            }
            tokio::select! {
                out = &mut dispose => break Some(out),
                _ = self.next_signal() => {}
            }
        };
        containment::kill_adopted();
        out
    }

    /// From now on the first signal cuts [`Supervisor::dispose`] short
    /// (kills every hosted server's process group at once), not only the
    /// second: for a run whose input ended, where a signal during the
    /// shutdown is its client asking it to be gone now (the official MCP
    /// SDKs close stdin, wait 2 s, then signal), and a backend still in its
    /// shutdown ladder must not outlive it.
    pub fn kill_on_first_signal(&mut self) {
        self.urgent = true;
    }

    /// The signal that interrupted the run, if one did.
    pub fn interrupted_by(&self) -> Option<i32> {
        self.first
    }

    /// `128 + signal` (130 for SIGINT, 143 for SIGTERM) when a signal
    /// interrupted the run.
    pub fn exit_code(&self) -> Option<u8> {
        self.first.map(|n| 128 + n as u8)
    }

    /// True when a signal cut `dispose` short (the second, or the first
    /// after [`Supervisor::kill_on_first_signal`]).
    pub fn forced(&self) -> bool {
        self.count >= 2 || (self.urgent && self.count >= 1)
    }
}
