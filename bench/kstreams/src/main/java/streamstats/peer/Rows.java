package streamstats.peer;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;

/**
 * Statistics rows with streamstats' fields and field order (src/windows/row.ts: the Ceilometer v2
 * Statistics names plus name, stddev, topic and partition), and streamstats' Kafka message key
 * (src/sinks/kafka.ts rowIdentityKey: JSON of [topic, partition, name, sorted groupby pairs, period_start]).
 */
final class Rows {
  private Rows() {}

  private static final JsonFactory JSON = new JsonFactory();
  /** JavaScript's Date.toISOString: always milliseconds, always Z. */
  private static final DateTimeFormatter ISO = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

  static String iso(long ms) {
    return ISO.format(Instant.ofEpochMilli(ms));
  }

  static String key(String topic, int partition, List<String> id, String periodStart) {
    StringWriter w = new StringWriter(128);
    try (JsonGenerator g = JSON.createGenerator(w)) {
      g.writeStartArray();
      g.writeString(topic);
      g.writeNumber(partition);
      g.writeString(id.get(0));
      g.writeStartArray();
      for (int i = 2; i + 1 < id.size(); i += 2) {
        g.writeStartArray();
        g.writeString(id.get(i));
        g.writeString(id.get(i + 1));
        g.writeEndArray();
      }
      g.writeEndArray();
      g.writeString(periodStart);
      g.writeEndArray();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return w.toString();
  }

  static String row(Cells.Cell c, List<String> id, long windowStart, long windowMs, String topic, int partition) {
    StringWriter w = new StringWriter(512);
    try (JsonGenerator g = JSON.createGenerator(w)) {
      g.writeStartObject();
      g.writeStringField("name", id.get(0));
      g.writeFieldName("unit");
      if (id.get(1) == null) g.writeNull();
      else g.writeString(id.get(1));
      g.writeObjectFieldStart("groupby");
      for (int i = 2; i + 1 < id.size(); i += 2) {
        g.writeFieldName(id.get(i));
        if (id.get(i + 1) == null) g.writeNull();
        else g.writeString(id.get(i + 1));
      }
      g.writeEndObject();
      g.writeNumberField("count", c.count);
      g.writeNumberField("sum", c.sum);
      g.writeNumberField("min", c.min);
      g.writeNumberField("max", c.max);
      g.writeNumberField("avg", c.avg());
      g.writeNumberField("stddev", c.stddev());
      g.writeStringField("duration_start", iso(c.tsMin));
      g.writeStringField("duration_end", iso(c.tsMax));
      g.writeNumberField("duration", (c.tsMax - c.tsMin) / 1000.0);
      g.writeNumberField("period", windowMs / 1000.0);
      g.writeStringField("period_start", iso(windowStart));
      g.writeStringField("period_end", iso(windowStart + windowMs));
      g.writeStringField("topic", topic);
      g.writeNumberField("partition", partition);
      g.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return w.toString();
  }
}
