//! `exthost check`: the shared check command with a live progress bar.

use std::io::{IsTerminal as _, Write};
use std::time::Duration;

use exthost_model::run::{self, CheckArgs, Progress};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::{EXIT_FAILED, EXIT_OK, Failure, Outcome};

/// Where progress goes: a bar on a terminal's stderr, `progress:` lines on
/// stderr otherwise (or with `--progress`), never stdout.
enum Sink {
    Bar(ProgressBar),
    Lines,
}

impl Sink {
    fn new(lines: bool) -> Self {
        if lines || !std::io::stderr().is_terminal() {
            return Sink::Lines;
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} checking [{elapsed_precise}] {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_message("starting");
        bar.enable_steady_tick(Duration::from_millis(120));
        Sink::Bar(bar)
    }

    fn show(&self, p: &Progress) {
        match self {
            Sink::Bar(bar) => {
                let rate = if p.seconds > 0.0 {
                    p.states as f64 / p.seconds
                } else {
                    0.0
                };
                bar.set_message(format!(
                    "{} unique states, depth {}, {:.0} states/s",
                    p.unique_states, p.max_depth, rate
                ));
            }
            Sink::Lines => eprintln!("{}", run::progress_line(p)),
        }
    }

    fn finish(&self) {
        if let Sink::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}

pub(crate) fn run(args: &CheckArgs, out: &mut dyn Write) -> Outcome {
    let sink = Sink::new(args.progress);
    let result = exthost_model::command::check_command(args, out, &mut |p| sink.show(&p));
    sink.finish();
    match result {
        Ok(true) => Ok(EXIT_OK),
        Ok(false) => Ok(EXIT_FAILED),
        Err(message) => Err(Failure::usage(message)),
    }
}
