//! The scheduling strategy (`explore` in a file, `--explore` on the command line,
//! SPEC §6): which deliverable message the simulator hands over next.

use std::fmt;
use std::str::FromStr;

use schemars::{Schema, SchemaGenerator, json_schema};

/// Most priority change points plus one for `pct:D`: a depth beyond the bugs PCT
/// finds in practice (a handful of ordering constraints), and a bound on the
/// strategy's per-run state.
pub const PCT_DEPTH_MAX: u32 = 64;

/// How the simulator picks the next delivery among those due at one virtual instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// A seeded uniform pick (the default).
    #[default]
    Random,
    /// Probabilistic concurrency testing: random actor priorities and `depth - 1`
    /// change points; `depth` is 1 to [`PCT_DEPTH_MAX`].
    Pct {
        /// The bug depth D of `pct:D`.
        depth: u32,
    },
    /// First in, first out: the order the messages were sent.
    Fifo,
}

impl FromStr for Strategy {
    type Err = String;

    fn from_str(s: &str) -> Result<Strategy, String> {
        match s {
            "random" => return Ok(Strategy::Random),
            "fifo" => return Ok(Strategy::Fifo),
            _ => {}
        }
        if let Some(depth) = s.strip_prefix("pct:") {
            // Plain decimal digits: no sign, no spaces, no leading zeros.
            let digits =
                !depth.is_empty() && depth.bytes().all(|b| b.is_ascii_digit()) && !depth.starts_with('0');
            return match depth.parse::<u32>() {
                Ok(depth) if digits && (1..=PCT_DEPTH_MAX).contains(&depth) => Ok(Strategy::Pct { depth }),
                _ => Err(format!(
                    "expected a depth from 1 to {PCT_DEPTH_MAX} after \"pct:\", got {s:?}"
                )),
            };
        }
        let hint = super::suggest::closest(s, ["random", "fifo", "pct"])
            .map(|name| format!("; did you mean `{name}`?"))
            .unwrap_or_default();
        Err(format!(
            "expected \"random\", \"fifo\" or \"pct:D\" with D an integer from 1 to {PCT_DEPTH_MAX}, got {s:?}{hint}"
        ))
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Strategy::Random => f.write_str("random"),
            Strategy::Pct { depth } => write!(f, "pct:{depth}"),
            Strategy::Fifo => f.write_str("fifo"),
        }
    }
}

/// The JSON Schema of `explore`: every accepted string, listed from the constant
/// (an editor offers them, and the schema cannot disagree with [`FromStr`]).
pub(super) fn schema(_: &mut SchemaGenerator) -> Schema {
    // `null` is the key left out, as for every optional key of the file.
    let forms: Vec<serde_json::Value> = [Strategy::Random, Strategy::Fifo]
        .into_iter()
        .chain((1..=PCT_DEPTH_MAX).map(|depth| Strategy::Pct { depth }))
        .map(|strategy| strategy.to_string().into())
        .chain([serde_json::Value::Null])
        .collect();
    let description = format!(
        "The scheduling strategy: \"random\" (default), \"fifo\" or \"pct:D\" (D from 1 to {PCT_DEPTH_MAX})."
    );
    json_schema!({
        "description": description,
        "type": ["string", "null"],
        "enum": forms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_round_trip_through_display() {
        for strategy in [
            Strategy::Random,
            Strategy::Fifo,
            Strategy::Pct { depth: 1 },
            Strategy::Pct { depth: 64 },
        ] {
            assert_eq!(strategy.to_string().parse::<Strategy>(), Ok(strategy));
        }
        assert_eq!("pct:3".parse::<Strategy>(), Ok(Strategy::Pct { depth: 3 }));
    }

    #[test]
    fn bad_forms_are_refused_naming_the_forms() {
        for bad in [
            "", "pct", "pct:", "pct:0", "pct:65", "pct:03", "pct:+3", "pct:-1", "pct: 3", "PCT:3", "Random",
            "lifo",
        ] {
            let err = bad.parse::<Strategy>().unwrap_err();
            assert!(
                err.contains("pct:") || err.contains("from 1 to 64"),
                "{bad:?}: {err}"
            );
        }
        assert!(
            "rnadom"
                .parse::<Strategy>()
                .unwrap_err()
                .ends_with("did you mean `random`?")
        );
    }
}
