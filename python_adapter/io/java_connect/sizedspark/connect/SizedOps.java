package sizedspark.connect;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.Optional;
import org.apache.spark.connect.proto.Relation;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connect.planner.SparkConnectPlanner;
import org.apache.spark.sql.connect.plugin.RelationPlugin;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The Spark Connect side of dbt-sized-spark: what the engine does to files, the metastore
 * and the JVM, run in the Connect server, where Spark's Hadoop configuration reaches the
 * table's storage (python_adapter/io/connect_client.py is the client).
 *
 * <p>A client sends a Relation whose extension is an Any of type {@link #TYPE_URL}: its value
 * holds the operation as JSON (field 1) and, for operations on a query, that query's
 * Relation (field 2). The operation runs when the server plans the relation, and the plan
 * returned is one row of one string column whose metadata holds the answer too (the client
 * reads the schema only), the answer as JSON: {"ok": value} or
 * {"error": {"class": ..., "message": ...}} (a failure is answered, not thrown, so the client
 * sees the Java exception's class, as py4j shows it to the session implementation).
 *
 * <p>Each request carries a nonce: Connect's plan cache never answers one from an earlier
 * one. A fenced operation (a write, a rename, a delete of a table's files) carries the path
 * of the table's lock and the holder's token, and runs only while the lock holds that
 * token: a dead client's operation still running on the server stops at its next step once
 * another writer broke its lock (FileOps.checkFence).
 */
public final class SizedOps implements RelationPlugin {
  public static final String TYPE_URL = "type.googleapis.com/sizedspark.Op";
  static final ObjectMapper JSON = new ObjectMapper();

  @Override
  public Optional<LogicalPlan> transform(byte[] any, SparkConnectPlanner planner) {
    Wire.Message outer = Wire.parse(any);
    if (!TYPE_URL.equals(outer.text(1))) {
      return Optional.empty();  // another plugin's relation
    }
    Wire.Message request = Wire.parse(outer.bytes(2));
    SparkSession session = planner.session();
    String answer;
    try {
      JsonNode op = JSON.readTree(request.text(1));
      byte[] child = request.bytes(2);
      LogicalPlan query = child == null ? null : planner.transformRelation(Relation.parseFrom(child));
      answer = ok(op.path("op").asText().equals("session.whoami")
          ? whoami(planner) : run(session, op, query));
    } catch (Throwable t) {
      answer = error(t);
    }
    // The answer is in the plan's schema (the field's metadata): the client asks for the
    // schema only (AnalyzePlan), so no query runs for it (~5 ms a call where collecting a
    // row took ~20 ms). The row holds it too, for a client that collects.
    org.apache.spark.sql.types.Metadata meta =
        new org.apache.spark.sql.types.MetadataBuilder().putString("answer", answer).build();
    StructType schema = new StructType().add("answer", DataTypes.StringType, true, meta);
    Row row = RowFactory.create(answer);
    return Optional.of(session.createDataFrame(Collections.singletonList(row), schema).logicalPlan());
  }

  /** The caller's Connect session as the server knows it: a writer records it in its lock,
   * so the next writer can end the session's operations if it dies. */
  static ObjectNode whoami(SparkConnectPlanner planner) {
    ObjectNode out = JSON.createObjectNode();
    out.put("user", planner.sessionHolder().userId());
    out.put("session", planner.sessionHolder().sessionId());
    return out;
  }

  static Object run(SparkSession session, JsonNode op, LogicalPlan query) throws Exception {
    String name = op.path("op").asText();
    if (name.startsWith("fs.")) {
      return new FileOps(session).run(name.substring(3), op);
    }
    if (name.startsWith("catalog.")) {
      return new CatalogOps(session).run(name.substring(8), op);
    }
    if (name.startsWith("session.") || name.startsWith("plan.")) {
      return SessionOps.run(session, name, op, query);
    }
    throw new IllegalArgumentException("unknown operation: " + name);
  }

  private static String ok(Object value) throws Exception {
    ObjectNode out = JSON.createObjectNode();
    out.set("ok", JSON.valueToTree(value));
    return JSON.writeValueAsString(out);
  }

  private static String error(Throwable t) {
    Throwable root = t;
    while (root.getCause() != null && root.getCause() != root
        && (root instanceof java.lang.reflect.InvocationTargetException
            || root instanceof RuntimeException && root.getMessage() == null)) {
      root = root.getCause();
    }
    ObjectNode err = JSON.createObjectNode();
    err.put("class", root.getClass().getName());
    err.put("message", String.valueOf(root.getMessage()));
    StringWriter trace = new StringWriter();
    root.printStackTrace(new PrintWriter(trace));
    String text = trace.toString();
    err.put("trace", text.length() > 4000 ? text.substring(0, 4000) : text);
    ObjectNode out = JSON.createObjectNode();
    out.set("error", err);
    try {
      return JSON.writeValueAsString(out);
    } catch (Exception e) {
      return "{\"error\": {\"class\": \"java.lang.Error\", \"message\": \"unserializable\"}}";
    }
  }

  static ArrayNode array() {
    return JSON.createArrayNode();
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** The few protobuf wire-format fields the request uses (length-delimited ones only), so
   * the plugin needs no generated message class of its own. */
  static final class Wire {
    static final class Message {
      final java.util.Map<Integer, byte[]> fields = new java.util.HashMap<>();

      String text(int field) {
        byte[] b = fields.get(field);
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
      }

      byte[] bytes(int field) {
        return fields.get(field);
      }
    }

    static Message parse(byte[] data) {
      Message m = new Message();
      int[] pos = {0};
      while (data != null && pos[0] < data.length) {
        long key = varint(data, pos);
        int field = (int) (key >>> 3);
        int wire = (int) (key & 7);
        if (wire == 2) {
          int len = (int) varint(data, pos);
          byte[] value = java.util.Arrays.copyOfRange(data, pos[0], pos[0] + len);
          pos[0] += len;
          m.fields.put(field, value);
        } else if (wire == 0) {
          varint(data, pos);
        } else {
          throw new IllegalArgumentException("unexpected wire type " + wire);
        }
      }
      return m;
    }

    static long varint(byte[] data, int[] pos) {
      long out = 0;
      int shift = 0;
      while (true) {
        byte b = data[pos[0]++];
        out |= (long) (b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
          return out;
        }
        shift += 7;
      }
    }
  }

  static ByteArrayOutputStream buffer() {
    return new ByteArrayOutputStream();
  }
}
