package sizedspark.connect;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.reflect.Method;
import java.net.URI;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.python.PythonUtils;
import org.apache.spark.sql.catalyst.QualifiedTableName;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTableType;
import org.apache.spark.sql.catalyst.catalog.CatalogUtils;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalog;
import org.apache.spark.sql.catalyst.catalog.SessionCatalog;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.util.CharVarcharUtils;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.datasources.PartitioningUtils;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * The metastore calls of python_adapter/spark/catalog.py and metastore_stats.py, made in
 * the Connect server's session: Spark's SQL has no statement for a partition's parameters,
 * a table's type, or a data schema without some column.
 */
final class CatalogOps {
  private final SparkSession session;
  private final ExternalCatalog catalog;

  CatalogOps(SparkSession session) {
    this.session = session;
    this.catalog = session.sharedState().externalCatalog();
  }

  Object run(String name, JsonNode op) throws Exception {
    String db = op.path("db").asText();
    String table = op.path("table").asText();
    switch (name) {
      case "describe":
        return describe(db, table);
      case "db_location":
        return CatalogUtils.URIToString(catalog.getDatabase(db).locationUri());
      case "set_type":
        return setType(db, table, op.path("external").asBoolean());
      case "property": {
        Option<String> v = catalog.getTable(db, table).properties().get(op.path("key").asText());
        return v.isDefined() ? v.get() : null;
      }
      case "set_data_schema":
        catalog.alterTableDataSchema(db, table,
            (StructType) session.parseDataType(op.path("schema").asText()));
        return null;
      case "partition_names":
        return strings(catalog.listPartitionNames(db, table, Option.empty()).iterator());
      case "partitions":
        return partitions(db, table, op);
      case "table_stats":
        return tableStats(db, table, op);
      case "uncache":
        uncache(db, table, op.path("mode").asText());
        return null;
      default:
        throw new IllegalArgumentException("unknown catalog operation: " + name);
    }
  }

  private ObjectNode describe(String db, String table) {
    CatalogTable meta;
    try {
      meta = catalog.getTable(db, table);
    } catch (Exception e) {
      String text = e.getClass().getName() + " " + e.getMessage();
      if (text.matches("(?s).*(NoSuch(Table|Database)Exception|TABLE_OR_VIEW_NOT_FOUND|SCHEMA_NOT_FOUND).*")) {
        return null;
      }
      throw e;
    }
    ObjectNode out = SizedOps.JSON.createObjectNode();
    Option<URI> location = meta.storage().locationUri();
    out.put("location", location.isDefined() ? CatalogUtils.URIToString(location.get()) : "");
    out.put("schema", CharVarcharUtils.replaceCharVarcharWithStringInSchema(meta.schema()).json());
    out.set("partition_columns", strings(meta.partitionColumnNames().iterator()));
    out.put("provider", meta.provider().isDefined() ? meta.provider().get() : "");
    out.put("table_type", meta.tableType().name());
    Option<String> input = meta.storage().inputFormat();
    out.put("input_format", input.isDefined() ? input.get() : "");
    return out;
  }

  private boolean setType(String db, String table, boolean external) throws Exception {
    CatalogTable current = catalog.getTable(db, table);
    CatalogTableType wanted = external ? CatalogTableType.EXTERNAL() : CatalogTableType.MANAGED();
    if (current.tableType().name().equals(wanted.name())) {
      return false;
    }
    catalog.alterTable((CatalogTable) caseCopy(current, 1, wanted));
    return true;
  }

  private int partitions(String db, String table, JsonNode op) throws Exception {
    String action = op.path("action").asText();
    if (action.equals("drop")) {
      List<Object> specs = new ArrayList<>();
      for (JsonNode rel : op.path("parts")) {
        specs.add(PartitioningUtils.parsePathFragment(rel.asText()));
      }
      Method drop = null;
      for (Method m : ExternalCatalog.class.getMethods()) {
        if (m.getName().equals("dropPartitions")) {
          drop = m;
        }
      }
      drop.invoke(catalog, db, table, toSeq(specs), true, false, true);  // keep the data
      return specs.size();
    }
    Object storage = catalog.getTable(db, table).storage();
    Object records = sizedspark.fs.PartitionRecords.build(
        (org.apache.spark.sql.catalyst.catalog.CatalogStorageFormat) storage,
        op.path("fields").asText());
    String method = action.equals("alter") ? "alterPartitions" : "createPartitions";
    for (Method m : ExternalCatalog.class.getMethods()) {
      if (m.getName().equals(method)) {
        if (action.equals("alter")) {
          m.invoke(catalog, db, table, records);
        } else {
          m.invoke(catalog, db, table, records, op.path("if_not_exists").asBoolean(false));
        }
        return 1;
      }
    }
    throw new IllegalStateException("no " + method + " in the external catalog");
  }

  /** The table's Hive statistics parameters set, Spark's own statistics keys (and numRows
   * when unknown) removed, in one call on the raw record (metastore_stats.write_table_stats). */
  private boolean tableStats(String db, String table, JsonNode op) throws Exception {
    Object external = session.sharedState().externalCatalog().unwrapped();
    if (!external.getClass().getSimpleName().equals("HiveExternalCatalog")) {
      return false;  // the client says it by SQL
    }
    CatalogTable raw = (CatalogTable) external.getClass().getMethod("getRawTable", String.class,
        String.class).invoke(external, db, table);
    scala.collection.immutable.Map<String, String> props = raw.properties();
    List<String> drop = new ArrayList<>();
    Iterator<String> keys = scala.jdk.javaapi.CollectionConverters.asJava(props.keys().iterator());
    while (keys.hasNext()) {
      String key = keys.next();
      if (key.startsWith(op.path("drop_prefix").asText())) {
        drop.add(key);
      }
    }
    for (JsonNode key : op.path("drop")) {
      drop.add(key.asText());
    }
    for (String key : drop) {
      props = (scala.collection.immutable.Map<String, String>) props.$minus(key);
    }
    Iterator<java.util.Map.Entry<String, JsonNode>> params = op.path("params").fields();
    while (params.hasNext()) {
      java.util.Map.Entry<String, JsonNode> e = params.next();
      props = props.updated(e.getKey(), e.getValue().asText());
    }
    int position = -1;
    Method copy = copyMethod(raw);
    Class<?>[] types = copy.getParameterTypes();
    for (int i = 0; i < types.length; i++) {
      if (types[i].getName().equals("scala.collection.immutable.Map")) {
        position = i;
        break;
      }
    }
    Object client = external.getClass().getMethod("client").invoke(external);
    Object altered = caseCopy(raw, position, props);
    for (Method m : client.getClass().getMethods()) {
      if (m.getName().equals("alterTable") && m.getParameterCount() == 1) {
        m.invoke(client, altered);
        return true;
      }
    }
    throw new IllegalStateException("no alterTable(CatalogTable) in the Hive client");
  }

  /** The session's cached relation of the table: dropped ("drop"), dropped or refreshed as
   * Spark's refreshTable would ("forget"), or listed again in place ("refresh"). */
  private void uncache(String db, String table, String mode) {
    SessionCatalog sessionCatalog = session.sessionState().catalog();
    TableIdentifier id = TableIdentifier.apply(table, Option.apply(db));
    if (mode.equals("drop")
        || mode.equals("forget") && session.sharedState().cacheManager().isEmpty()) {
      sessionCatalog.invalidateCachedTable(id);
    } else if (mode.equals("forget")) {
      session.catalog().refreshTable(db + "." + table);
    } else {
      TableIdentifier name = sessionCatalog.qualifyIdentifier(id);
      LogicalPlan cached = sessionCatalog.getCachedTable(QualifiedTableName.apply(
          name.catalog().get(), name.database().get(), name.table()));
      if (cached != null) {
        cached.refresh();
      }
    }
  }

  static Object toSeq(List<?> items) throws Exception {
    return PythonUtils.class.getMethod("toSeq", List.class).invoke(null, items);
  }

  static ArrayNode strings(scala.collection.Iterator<String> it) {
    ArrayNode out = SizedOps.array();
    while (it.hasNext()) {
      out.add(it.next());
    }
    return out;
  }

  static Method copyMethod(Object obj) {
    Method copy = null;
    for (Method m : obj.getClass().getMethods()) {
      if (m.getName().equals("copy")) {
        copy = m;
      }
    }
    return copy;
  }

  /** A case class instance with argument `position` of its copy replaced, the others as
   * they are (by reflection: the fields differ between Spark versions). */
  static Object caseCopy(Object obj, int position, Object value) throws Exception {
    Method copy = copyMethod(obj);
    Object[] args = new Object[copy.getParameterCount()];
    for (int k = 0; k < args.length; k++) {
      args[k] = obj.getClass().getMethod("copy$default$" + (k + 1)).invoke(obj);
    }
    args[position] = value;
    return copy.invoke(obj, args);
  }
}
