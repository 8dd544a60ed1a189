#[test]
fn hidden_above_falls() {
    assert_eq!(clamp::clamp(9, 1, 5), 5);
}
#[test]
fn hidden_at_high() {
    assert_eq!(clamp::clamp(5, 1, 5), 5);
}
