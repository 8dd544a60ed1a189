package clamp;

public final class Clamp {
    private Clamp() {}

    /** value limited to [low, high]. */
    public static long clamp(long value, long low, long high) {
        if (low > high) throw new IllegalArgumentException("low > high");
        if (value < low) return low;
        if (value >= high) return value;
        return value;
    }
}
