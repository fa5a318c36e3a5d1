//! What asksim's own state machines check of every line before its message
//! (PROTOCOL.md 1, 8): a life starts with one `hello`, of the version they
//! speak, and never has another; time never goes back. A line that breaks this
//! is not one asksim writes, and the process says so and stops, where it took
//! it as if nothing were wrong.

use crate::wire::common::PROTOCOL_VERSION;

/// The `hello` seen and the last line's time.
#[derive(Debug, Default)]
pub struct LineOrder {
    hello: bool,
    t_ns: u64,
}

impl LineOrder {
    /// Takes a line stamped `t_ns`, with its version if it is a `hello`.
    pub fn take(&mut self, t_ns: u64, hello: Option<u32>) -> Result<(), String> {
        match (hello, self.hello) {
            (Some(_), true) => {
                return Err("a second hello (a process serves one life, which one hello starts)".into());
            }
            (Some(v), false) if v != PROTOCOL_VERSION => {
                return Err(format!(
                    "a hello of protocol {v}; this implementation speaks {PROTOCOL_VERSION}"
                ));
            }
            (Some(_), false) => self.hello = true,
            (None, false) => return Err("a message before hello".into()),
            (None, true) => {}
        }
        if t_ns < self.t_ns {
            return Err(format!("t_ns went backwards: {t_ns} after {}", self.t_ns));
        }
        self.t_ns = t_ns;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_hello_of_this_version_first_and_time_that_never_goes_back() {
        let mut order = LineOrder::default();
        assert_eq!(order.take(0, None).unwrap_err(), "a message before hello");
        assert!(
            order
                .take(0, Some(2))
                .unwrap_err()
                .contains("a hello of protocol 2; this implementation speaks 1")
        );
        order.take(5, Some(1)).unwrap();
        order.take(5, None).unwrap();
        order.take(9, None).unwrap();
        assert!(order.take(9, Some(1)).unwrap_err().contains("a second hello"));
        assert_eq!(order.take(8, None).unwrap_err(), "t_ns went backwards: 8 after 9");
    }
}
