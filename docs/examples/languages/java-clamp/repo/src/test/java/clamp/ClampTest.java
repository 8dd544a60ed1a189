package clamp;

import static org.junit.Assert.assertEquals;

import org.junit.Test;

public class ClampTest {
    @Test public void insideStays() { assertEquals(3, Clamp.clamp(3, 1, 5)); }
    @Test public void belowRises() { assertEquals(1, Clamp.clamp(-2, 1, 5)); }
}
