//! `--chrome-trace` and `--timeline` stream (SPEC §8): what they write through a
//! tap as the run goes is byte for byte what they make from the run's kept
//! events, on every scenario, so streaming changed no output.

use crate::common;

use asksim::scenario::{self, Clock};
use asksim::sim::engine::tap::Tap;
use asksim::sim::show::chrome_trace::{ChromeTrace, chrome_trace};
use asksim::sim::show::timeline::{Timeline, timeline};
use asksim::sim::{self, RunOptions};

#[test]
fn the_streamed_trace_and_timeline_equal_those_made_from_kept_events() {
    let mut checked = 0;
    for file in common::json_files("scenarios")
        .into_iter()
        .filter(|f| !common::is_big_load(f))
    {
        let scenario = scenario::load(&file).unwrap();
        let mut options = RunOptions::new(&scenario, scenario.seed, Clock::Virtual);
        let (trace, trace_observer) = Tap::new(ChromeTrace::new(Vec::new()));
        let (lines, lines_observer) = Tap::new(Timeline::spooled().unwrap());
        options.taps = vec![trace_observer, lines_observer];
        let output = sim::run_options(&scenario, options).unwrap();
        let name = file.display();

        let streamed: serde_json::Value = serde_json::from_slice(&trace.take().finish().unwrap()).unwrap();
        assert_eq!(streamed, chrome_trace(output.events()), "{name}: the trace");

        let mut spooled = Vec::new();
        lines
            .take()
            .for_each_line(|line| spooled.push(line.to_owned()))
            .unwrap();
        assert_eq!(spooled, timeline(output.events()), "{name}: the timeline");
        assert!(!spooled.is_empty(), "{name}: a run has events");
        checked += 1;
    }
    assert!(checked > 30, "every scenario of the repo, not {checked}");
}
