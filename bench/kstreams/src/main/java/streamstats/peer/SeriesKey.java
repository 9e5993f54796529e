package streamstats.peer;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The series identity as streamstats builds it for non-ASCII series (src/core/series.ts seriesKey, the
 * length-prefixed form; its ASCII series have a JSON form, which this peer does not need: only the
 * rows are compared): the meter name,
 * the unit, then every dimension sorted by name, each part length-prefixed ("4:host"), null as "-".
 * String.length() and String.compareTo count UTF-16 code units, as JavaScript's length and < do, so
 * the keys are byte for byte those of streamstats.
 */
final class SeriesKey {
  private SeriesKey() {}

  /** dims must iterate in name order (a TreeMap). */
  static String encode(String name, String unit, Map<String, String> dims) {
    StringBuilder sb = new StringBuilder(64 + 32 * dims.size());
    part(sb, name);
    part(sb, unit);
    for (Map.Entry<String, String> d : dims.entrySet()) {
      part(sb, d.getKey());
      part(sb, d.getValue());
    }
    return sb.toString();
  }

  private static void part(StringBuilder sb, String s) {
    if (s == null) sb.append('-');
    else sb.append(s.length()).append(':').append(s);
  }

  /** The inverse of encode: [name, unit, k1, v1, k2, v2, ...] (unit and values may be null). */
  static List<String> decode(String key) {
    List<String> parts = new ArrayList<>();
    int i = 0;
    while (i < key.length()) {
      if (key.charAt(i) == '-') {
        parts.add(null);
        i++;
        continue;
      }
      int colon = key.indexOf(':', i);
      if (colon < 0) throw new IllegalArgumentException("not a series key: " + key);
      int len = Integer.parseInt(key, i, colon, 10);
      parts.add(key.substring(colon + 1, colon + 1 + len));
      i = colon + 1 + len;
    }
    return parts;
  }
}
