package clamp;

import static org.junit.Assert.assertEquals;

import org.junit.Test;

public class HiddenClampTest {
    @Test public void aboveFalls() { assertEquals(5, Clamp.clamp(9, 1, 5)); }
    @Test public void atHigh() { assertEquals(5, Clamp.clamp(5, 1, 5)); }
}
