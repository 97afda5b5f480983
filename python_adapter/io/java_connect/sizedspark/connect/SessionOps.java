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

  /**
   * Ends a dead client's Connect session: its operations interrupted, the session closed,
   * its Spark jobs cancelled, and waits until none of them runs (a Connect server keeps a
   * client's operations going for a while after the client is gone, waiting for it to
   * reattach). The next writer calls it after taking over that client's lock, before
   * recovery: no job of the dead writer then still writes into its staging directory.
   * Returns {"found": whether the session was there, "interrupted": operations,
   * "jobs": jobs cancelled, "running": jobs still running when the wait ended}.
   */
  static ObjectNode endClient(SparkSession session, String user, String sessionId, long waitMs) {
    ObjectNode out = SizedOps.JSON.createObjectNode();
    org.apache.spark.sql.connect.service.SparkConnectSessionManager manager =
        org.apache.spark.sql.connect.service.SparkConnectService$.MODULE$.sessionManager();
    org.apache.spark.sql.connect.service.SessionKey key =
        org.apache.spark.sql.connect.service.SessionKey.apply(user, sessionId);
    scala.Option<org.apache.spark.sql.connect.service.SessionHolder> holder =
        manager.getIsolatedSessionIfPresent(key);
    out.put("found", holder.isDefined());
    int interrupted = 0;
    if (holder.isDefined()) {
      interrupted = holder.get().interruptAll().size();
    }
    out.put("interrupted", interrupted);
    String marker = "_Session_" + sessionId + "_";
    org.apache.spark.SparkContext sc = session.sparkContext();
    long deadline = System.currentTimeMillis() + waitMs;
    java.util.Set<String> cancelled = new java.util.HashSet<>();
    int running;
    while (true) {
      running = 0;
      java.util.List<org.apache.spark.JobExecutionStatus> statuses =
          java.util.Collections.singletonList(org.apache.spark.JobExecutionStatus.RUNNING);
      scala.collection.Iterator<org.apache.spark.status.api.v1.JobData> jobs =
          sc.statusStore().jobsList(statuses).iterator();
      while (jobs.hasNext()) {
        org.apache.spark.status.api.v1.JobData job = jobs.next();
        scala.collection.Iterator<String> tags = job.jobTags().iterator();
        while (tags.hasNext()) {
          String tag = tags.next();
          if (tag.contains(marker)) {
            running++;
            if (cancelled.add(tag)) {
              sc.cancelJobsWithTag(tag);
            }
            break;
          }
        }
      }
      if (running == 0 || System.currentTimeMillis() > deadline) {
        break;
      }
      try {
        Thread.sleep(200);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    out.put("jobs", cancelled.size());
    out.put("running", running);
    if (holder.isDefined()) {
      try {  // nothing of it runs any more: its state goes too
        manager.closeSession(key, manager.closeSession$default$2());
      } catch (RuntimeException e) {
        // an operation still between states: the server expires the session itself
      }
    }
    return out;
  }

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
      case "session.end_client":
        return endClient(session, op.path("user").asText(), op.path("session").asText(),
            op.path("wait_ms").asLong(120000));
      default:
        throw new IllegalArgumentException("unknown session operation: " + name);
    }
  }
}
