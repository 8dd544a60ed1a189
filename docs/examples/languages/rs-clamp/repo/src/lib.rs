/// `value` limited to `[low, high]`.
pub fn clamp(value: i64, low: i64, high: i64) -> i64 {
    assert!(low <= high, "low > high");
    if value < low {
        low
    } else if value >= high {
        value
    } else {
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn inside_stays() {
        assert_eq!(clamp(3, 1, 5), 3);
    }
}
