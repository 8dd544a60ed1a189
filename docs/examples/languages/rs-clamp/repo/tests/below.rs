#[test]
fn below_rises() {
    assert_eq!(clamp::clamp(-2, 1, 5), 1);
}
