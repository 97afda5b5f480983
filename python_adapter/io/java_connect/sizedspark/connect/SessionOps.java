package sizedspark.connect;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.network.util.JavaUtils;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.internal.SQLConf;

/**
 * What the engine reads of the session and of a query's plan (py4j's `_jsparkSession` and
 * `_jdf` in the session implementation): settings in their parsed form, and Spark's size
 * estimate of a query.
 */
final class SessionOps {
  private SessionOps() {}

  static Object run(SparkSession session, String name, JsonNode op, LogicalPlan query) {
    ObjectNode out = SizedOps.JSON.createObjectNode();
    SQLConf conf = session.sessionState().conf();
    switch (name) {
      case "session.info":
        out.put("broadcast_limit", conf.autoBroadcastJoinThreshold());
        out.put("case_sensitive", conf.caseSensitiveAnalysis());
        out.put("max_partition_bytes", conf.filesMaxPartitionBytes());
        out.put("open_cost", conf.filesOpenCostInBytes());
        out.put("parallelism", session.sparkContext().defaultParallelism());
        out.put("advisory_bytes", JavaUtils.byteStringAsBytes(
            conf.getConfString("spark.sql.adaptive.advisoryPartitionSizeInBytes", "64MB")));
        out.put("external_catalog", session.sharedState().externalCatalog().unwrapped()
            .getClass().getSimpleName());
        out.put("version", session.version());
        return out;
      case "plan.stats": {
        QueryExecution qe = session.sessionState().executePlan(query,
            session.sessionState().executePlan$default$2());
        LogicalPlan optimized = qe.optimizedPlan();
        out.put("size", optimized.stats().sizeInBytes().toString());
        out.put("default_size", optimized.schema().defaultSize());
        out.put("deterministic", optimized.deterministic());
        if (op.path("plan_text").asBoolean(false)) {
          out.put("plan_text", optimized.toString());
        }
        if (op.path("executed_text").asBoolean(false)) {
          out.put("executed_text", qe.executedPlan().toString());
        }
        return out;
      }
      case "plan.partitions": {
        QueryExecution qe = session.sessionState().executePlan(query,
            session.sessionState().executePlan$default$2());
        out.put("partitions", qe.toRdd().getNumPartitions());
        return out;
      }
      case "plan.bloom_probe": {
        // the keys of the query's rows stay in the server, as the session collects them
        // into the driver's JVM (python_adapter/spark/bloom.py)
        java.util.List<org.apache.spark.sql.Row> keys =
            org.apache.spark.sql.classic.Dataset.ofRows(session, query).collectAsList();
        return sizedspark.fs.BloomProbe.probe(session.sessionState().newHadoopConf(),
            op.path("files").asText(), op.path("key").asText(), keys);
      }
      default:
        throw new IllegalArgumentException("unknown session operation: " + name);
    }
  }
}
