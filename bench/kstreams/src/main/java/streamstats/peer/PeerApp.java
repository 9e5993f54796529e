package streamstats.peer;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.LogAndContinueExceptionHandler;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.WindowStore;

/**
 * The Kafka Streams peer of streamstats: per series and 60 s tumbling event-time window, count, sum,
 * min, max, sum of squares and first/last event time, with the grace of streamstats' default
 * ALLOWED_LATENESS_SECONDS (5 s), final results only (suppress until the window closes), one JSON row
 * per closed window to the output topic.
 *
 * Stream time is per task = per input partition (no repartition), which is streamstats' per-partition
 * watermark: a window closes, and later records for it are dropped, once the partition's largest event
 * time reaches window end + grace.
 *
 * Settings (environment): KAFKA_BROKERS, INPUT_TOPIC, OUTPUT_TOPIC, APPLICATION_ID (also the consumer
 * group and the prefix of its internal topics), PROCESSING_GUARANTEE (at_least_once | exactly_once_v2),
 * STATE_DIR, and WINDOW_SECONDS (60), GRACE_SECONDS (5), STREAM_THREADS (2), COMMIT_INTERVAL_MS
 * (1000 at least once, 100 exactly once), CACHE_MAX_BYTES (10 MiB, Kafka Streams' default).
 * Prints {"event":"running"} on stdout once every task runs, and on SIGTERM/SIGINT closes, prints
 * {"event":"stopped",...} and exits 0; peak RSS goes to stderr as {"bench":"maxrss",...}.
 */
public final class PeerApp {
  private PeerApp() {}

  static final AtomicLong ROWS = new AtomicLong();

  private static String env(String name, String fallback) {
    String v = System.getenv(name);
    if (v != null && !v.isEmpty()) return v;
    if (fallback == null) throw new IllegalArgumentException(name + " is required");
    return fallback;
  }

  private static long longEnv(String name, long fallback, long min, long max) {
    String s = env(name, Long.toString(fallback));
    long v;
    try {
      v = Long.parseLong(s);
    } catch (NumberFormatException e) {
      v = min - 1;
    }
    if (v < min || v > max) throw new IllegalArgumentException(name + " (" + s + ") must be an integer from " + min + " to " + max);
    return v;
  }

  static Topology topology(String input, String output, long windowMs, long graceMs) {
    StreamsBuilder b = new StreamsBuilder();
    b.stream(input, Consumed.with(Serdes.String(), new Point.PointSerde()).withTimestampExtractor(new Point.EventTime()))
        .groupByKey(Grouped.with(Serdes.String(), new Point.PointSerde()))
        .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(windowMs), Duration.ofMillis(graceMs)))
        .aggregate(Cells::new, (key, point, cells) -> cells.add(point),
            Materialized.<String, Cells, WindowStore<Bytes, byte[]>>as("series-windows")
                .withKeySerde(Serdes.String())
                .withValueSerde(new Cells.CellsSerde()))
        .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()).withName("final-rows"))
        .toStream()
        .process(() -> new RowProcessor(input, windowMs))
        .to(output, Produced.with(Serdes.String(), Serdes.String()));
    return b.build();
  }

  /** A closed (key, window) becomes one row per series, keyed like streamstats' Kafka sink keys rows. */
  static final class RowProcessor implements Processor<Windowed<String>, Cells, String, String> {
    private final String topic;
    private final long windowMs;
    private ProcessorContext<String, String> context;

    RowProcessor(String topic, long windowMs) {
      this.topic = topic;
      this.windowMs = windowMs;
    }

    @Override
    public void init(ProcessorContext<String, String> context) {
      this.context = context;
    }

    @Override
    public void process(Record<Windowed<String>, Cells> r) {
      if (r.value() == null) return;
      // One task per input partition (a single source topic, no repartition).
      int partition = context.taskId().partition();
      long start = r.key().window().start();
      String periodStart = Rows.iso(start);
      for (Cells.Cell c : r.value().cells) {
        List<String> id = SeriesKey.decode(c.series);
        context.forward(new Record<>(Rows.key(topic, partition, id, periodStart), Rows.row(c, id, start, windowMs, topic, partition), r.timestamp()));
        ROWS.incrementAndGet();
      }
    }
  }

  /** Sum of one Kafka Streams metric over all its instances (threads, tasks). */
  private static double metricSum(KafkaStreams streams, String group, String name) {
    double sum = 0;
    for (Map.Entry<MetricName, ? extends Metric> e : streams.metrics().entrySet()) {
      if (e.getKey().group().equals(group) && e.getKey().name().equals(name) && e.getValue().metricValue() instanceof Number n && !Double.isNaN(n.doubleValue())) {
        sum += n.doubleValue();
      }
    }
    return sum;
  }

  /** Linux peak resident set (VmHWM) of this JVM, in bytes; NaN elsewhere. */
  private static double peakRssBytes() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
        if (line.startsWith("VmHWM:")) return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024.0;
      }
    } catch (IOException | RuntimeException e) {
      // not Linux
    }
    return Double.NaN;
  }

  public static void main(String[] args) throws Exception {
    String guarantee = env("PROCESSING_GUARANTEE", StreamsConfig.AT_LEAST_ONCE);
    if (!guarantee.equals(StreamsConfig.AT_LEAST_ONCE) && !guarantee.equals(StreamsConfig.EXACTLY_ONCE_V2)) {
      throw new IllegalArgumentException("PROCESSING_GUARANTEE (" + guarantee + ") must be at_least_once or exactly_once_v2");
    }
    boolean eos = guarantee.equals(StreamsConfig.EXACTLY_ONCE_V2);
    String input = env("INPUT_TOPIC", null);
    String output = env("OUTPUT_TOPIC", null);
    long windowMs = longEnv("WINDOW_SECONDS", 60, 1, 86400) * 1000;
    long graceMs = longEnv("GRACE_SECONDS", 5, 0, 7 * 86400) * 1000;

    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, env("APPLICATION_ID", null));
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, env("KAFKA_BROKERS", "127.0.0.1:9092"));
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
    p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, (int) longEnv("STREAM_THREADS", 2, 1, 64));
    p.put(StreamsConfig.STATE_DIR_CONFIG, env("STATE_DIR", System.getProperty("java.io.tmpdir") + "/kstreams-peer"));
    // With caching on, the window store forwards updates to suppress only when the cache flushes, at
    // commit: the commit interval is how late a closed window can be written. 1 s at least once
    // (Kafka Streams' 30 s default would hold rows back for up to 30 s), 100 ms (the default) exactly once.
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, longEnv("COMMIT_INTERVAL_MS", eos ? 100 : 1000, 1, 3_600_000));
    p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, longEnv("CACHE_MAX_BYTES", 10L << 20, 0, Long.MAX_VALUE));
    p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, (int) longEnv("REPLICATION_FACTOR", 1, 1, 16));
    p.put(StreamsConfig.DEFAULT_DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG, LogAndContinueExceptionHandler.class);
    p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");

    KafkaStreams streams = new KafkaStreams(topology(input, output, windowMs, graceMs), p);
    CountDownLatch stop = new CountDownLatch(1);
    AtomicInteger exitCode = new AtomicInteger(0);
    streams.setUncaughtExceptionHandler(e -> {
      System.err.println("kstreams-peer: stream thread failed: " + e);
      exitCode.set(1);
      stop.countDown();
      return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
    });
    streams.setStateListener((now, before) -> {
      if (now == KafkaStreams.State.RUNNING) {
        System.out.println("{\"event\":\"running\"}");
        System.out.flush();
      } else if (now == KafkaStreams.State.ERROR) {
        exitCode.compareAndSet(0, 1);
        stop.countDown();
      }
    });
    for (String sig : new String[] {"TERM", "INT"}) sun.misc.Signal.handle(new sun.misc.Signal(sig), s -> stop.countDown());

    streams.start();
    stop.await();
    double dropped = metricSum(streams, "stream-task-metrics", "dropped-records-total");
    boolean closed = streams.close(Duration.ofSeconds(60));
    System.out.println("{\"event\":\"stopped\",\"closed\":" + closed + ",\"parsed\":" + Point.PARSED.get() + ",\"rejected\":" + Point.REJECTED.get()
        + ",\"droppedRecords\":" + (long) dropped + ",\"rows\":" + ROWS.get() + "}");
    System.out.flush();
    System.err.println("{\"bench\":\"maxrss\",\"maxRssBytes\":" + (long) peakRssBytes() + "}");
    System.exit(closed ? exitCode.get() : 1);
  }
}
