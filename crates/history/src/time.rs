//! Times in messages for people: seconds with milliseconds (`21.003 s`), one format used by
//! every verdict, violation, evidence and report line. Files for machines (JSONL, JSON)
//! keep integer µs or ms and never go through here.

/// `us` microseconds as seconds with milliseconds: `21.003 s`; the microsecond digits
/// follow only when they are not zero (`0.000499 s`, `21.003250 s`), so nothing a reviewer
/// may look up in a history (whose times are µs) is rounded away.
pub fn seconds_us(us: u64) -> String {
    let (secs, micros) = (us / 1_000_000, us % 1_000_000);
    if micros % 1_000 == 0 {
        format!("{secs}.{:03} s", micros / 1_000)
    } else {
        format!("{secs}.{micros:06} s")
    }
}

/// `ms` milliseconds as seconds with milliseconds: `21.003 s`.
pub fn seconds_ms(ms: u64) -> String {
    seconds_us(ms.saturating_mul(1_000))
}

/// A signed span of `us` microseconds (a difference of two readings): `-1.500 s`.
pub fn seconds_signed_us(us: i64) -> String {
    let text = seconds_us(us.unsigned_abs());
    if us < 0 { format!("-{text}") } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_milliseconds_print_three_decimals() {
        assert_eq!(seconds_us(21_003_000), "21.003 s");
        assert_eq!(seconds_us(0), "0.000 s");
        assert_eq!(seconds_ms(1_500), "1.500 s");
        assert_eq!(seconds_ms(40_000), "40.000 s");
    }

    #[test]
    fn microseconds_are_kept_when_there_are_any() {
        assert_eq!(seconds_us(499), "0.000499 s");
        assert_eq!(seconds_us(21_003_250), "21.003250 s");
    }

    #[test]
    fn a_negative_span_has_its_sign() {
        assert_eq!(seconds_signed_us(-1_500_000), "-1.500 s");
        assert_eq!(seconds_signed_us(2_000), "0.002 s");
    }
}
