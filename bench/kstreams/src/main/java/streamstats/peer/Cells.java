package streamstats.peer;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

/**
 * The aggregate of one (message key, window): count, sum, min, max, sum of squares and the first and
 * last event time of each series seen under that key. The input is keyed by series (streamstats-produce
 * keys by name|host), so this holds exactly one series; it is a list so that a topic keyed otherwise
 * still gets one row per streamstats series, without the repartition topic a re-keying would add.
 */
final class Cells {
  static final class Cell {
    final String series;
    long count;
    double sum;
    double min = Double.POSITIVE_INFINITY;
    double max = Double.NEGATIVE_INFINITY;
    double sumSquares;
    long tsMin = Long.MAX_VALUE;
    long tsMax = Long.MIN_VALUE;

    Cell(String series) {
      this.series = series;
    }

    double avg() {
      return sum / count;
    }

    /** Population standard deviation, as streamstats (and Ceilometer) report it. */
    double stddev() {
      double var = (sumSquares - sum * sum / count) / count;
      return var > 0 ? Math.sqrt(var) : 0;
    }
  }

  final List<Cell> cells = new ArrayList<>(1);

  Cells add(Point p) {
    Cell c = null;
    for (Cell x : cells) {
      if (x.series.equals(p.series)) {
        c = x;
        break;
      }
    }
    if (c == null) {
      c = new Cell(p.series);
      cells.add(c);
    }
    c.count++;
    c.sum += p.value;
    c.sumSquares += p.value * p.value;
    if (p.value < c.min) c.min = p.value;
    if (p.value > c.max) c.max = p.value;
    if (p.tsMs < c.tsMin) c.tsMin = p.tsMs;
    if (p.tsMs > c.tsMax) c.tsMax = p.tsMs;
    return this;
  }

  /** Binary: cell count, then per cell the UTF-8 series key (length-prefixed) and the fixed fields. */
  static final class CellsSerde implements Serde<Cells> {
    private static final int FIXED = 8 + 8 * 4 + 8 * 2;

    @Override
    public Serializer<Cells> serializer() {
      return (topic, a) -> {
        if (a == null) return null;
        List<byte[]> keys = new ArrayList<>(a.cells.size());
        int size = 4;
        for (Cell c : a.cells) {
          byte[] k = c.series.getBytes(StandardCharsets.UTF_8);
          keys.add(k);
          size += 4 + k.length + FIXED;
        }
        ByteBuffer b = ByteBuffer.allocate(size);
        b.putInt(a.cells.size());
        for (int i = 0; i < a.cells.size(); i++) {
          Cell c = a.cells.get(i);
          byte[] k = keys.get(i);
          b.putInt(k.length).put(k);
          b.putLong(c.count).putDouble(c.sum).putDouble(c.min).putDouble(c.max).putDouble(c.sumSquares);
          b.putLong(c.tsMin).putLong(c.tsMax);
        }
        return b.array();
      };
    }

    @Override
    public Deserializer<Cells> deserializer() {
      return (topic, data) -> {
        if (data == null) return null;
        ByteBuffer b = ByteBuffer.wrap(data);
        Cells a = new Cells();
        int n = b.getInt();
        for (int i = 0; i < n; i++) {
          byte[] k = new byte[b.getInt()];
          b.get(k);
          Cell c = new Cell(new String(k, StandardCharsets.UTF_8));
          c.count = b.getLong();
          c.sum = b.getDouble();
          c.min = b.getDouble();
          c.max = b.getDouble();
          c.sumSquares = b.getDouble();
          c.tsMin = b.getLong();
          c.tsMax = b.getLong();
          a.cells.add(c);
        }
        return a;
      };
    }
  }
}
