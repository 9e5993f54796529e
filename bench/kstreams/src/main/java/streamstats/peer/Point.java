package streamstats.peer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.streams.processor.TimestampExtractor;

/**
 * One Monasca point as streamstats reads it (src/core/formats/monasca.ts): metric.name, metric.value,
 * metric.timestamp (ms since the epoch), metric.dimensions, and the envelope's meta.tenantId and
 * meta.region as the dimensions _tenant_id and _region (they win over same-named dimensions). Monasca
 * has no unit. Parsed once, by the value deserializer; the timestamp extractor reads the parsed point.
 */
final class Point {
  final String series;
  final double value;
  final long tsMs;

  Point(String series, double value, long tsMs) {
    this.series = series;
    this.value = value;
    this.tsMs = tsMs;
  }

  static final AtomicLong PARSED = new AtomicLong();
  static final AtomicLong REJECTED = new AtomicLong();

  private static final ObjectMapper MAPPER = new ObjectMapper();

  static Point parse(byte[] bytes) throws IOException {
    JsonNode root = MAPPER.readTree(bytes);
    JsonNode metric = root == null ? null : root.get("metric");
    if (metric == null || !metric.isObject()) throw new IOException("metric: an object is required");
    JsonNode name = metric.get("name");
    if (name == null || !name.isTextual() || name.textValue().isEmpty()) throw new IOException("metric.name: a non-empty string is required");
    JsonNode value = metric.get("value");
    if (value == null || !value.isNumber() || !Double.isFinite(value.doubleValue())) throw new IOException("metric.value: a finite number is required");
    JsonNode ts = metric.get("timestamp");
    if (ts == null || !ts.isNumber()) throw new IOException("metric.timestamp: ms since the epoch are required");
    TreeMap<String, String> dims = new TreeMap<>();
    JsonNode d = metric.get("dimensions");
    if (d != null && !d.isNull()) {
      if (!d.isObject()) throw new IOException("metric.dimensions: an object is required");
      for (Iterator<Map.Entry<String, JsonNode>> it = d.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        dims.put(e.getKey(), dimValue(e.getValue()));
      }
    }
    JsonNode meta = root.get("meta");
    if (meta != null && meta.isObject()) {
      JsonNode tenant = meta.get("tenantId");
      if (tenant != null && !tenant.isNull()) dims.put("_tenant_id", dimValue(tenant));
      JsonNode region = meta.get("region");
      if (region != null && !region.isNull()) dims.put("_region", dimValue(region));
    }
    return new Point(SeriesKey.encode(name.textValue(), null, dims), value.doubleValue(), (long) Math.floor(ts.doubleValue()));
  }

  /** streamstats' dimValue: strings as they are, numbers and booleans as JavaScript's String() writes them. */
  private static String dimValue(JsonNode v) throws IOException {
    if (v.isTextual()) return v.textValue();
    if (v.isBoolean()) return v.booleanValue() ? "true" : "false";
    if (v.isIntegralNumber() && v.canConvertToLong()) return Long.toString(v.longValue());
    if (v.isNumber()) {
      double x = v.doubleValue();
      if (x == Math.rint(x) && Math.abs(x) < 1e21) return Long.toString((long) x);
      return Double.toString(x);
    }
    throw new IOException("a dimension value must be a string, a number or a boolean");
  }

  /** Bad JSON throws, so the application's deserialization handler (log and continue) skips the record. */
  static final class JsonDeserializer implements Deserializer<Point> {
    @Override
    public Point deserialize(String topic, byte[] data) {
      if (data == null) return null;
      try {
        Point p = parse(data);
        PARSED.incrementAndGet();
        return p;
      } catch (IOException | RuntimeException e) {
        REJECTED.incrementAndGet();
        throw new SerializationException("not a Monasca point: " + e.getMessage(), e);
      }
    }
  }

  /** Points never travel (there is no repartition): a serde is needed only to name the type. */
  static final class PointSerde implements Serde<Point> {
    @Override
    public Serializer<Point> serializer() {
      return (topic, p) -> {
        throw new UnsupportedOperationException("points are not written to Kafka");
      };
    }

    @Override
    public Deserializer<Point> deserializer() {
      return new JsonDeserializer();
    }
  }

  /** Event time = metric.timestamp, read from the already parsed value. */
  static final class EventTime implements TimestampExtractor {
    @Override
    public long extract(ConsumerRecord<Object, Object> record, long partitionTime) {
      return record.value() instanceof Point p ? p.tsMs : -1;
    }
  }
}
