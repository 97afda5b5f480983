package sizedspark.fs;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.python.PythonUtils;
import org.apache.spark.sql.catalyst.catalog.CatalogStatistics;
import org.apache.spark.sql.catalyst.catalog.CatalogStorageFormat;
import org.apache.spark.sql.catalyst.catalog.CatalogTablePartition;
import org.apache.spark.sql.catalyst.catalog.CatalogUtils;
import org.apache.spark.sql.execution.datasources.PartitioningUtils;
import scala.Option;

/**
 * The catalog records of many partitions in one call from Python, where py4j costs a round
 * trip per call and a year of daily partitions took seconds: each is the table's storage
 * at the partition's directory, as Spark's ALTER TABLE ADD PARTITION builds it, with Hive's
 * statistics as its parameters (python_adapter/spark/metastore_stats.py).
 */
public final class PartitionRecords {
  private PartitionRecords() {}

  /**
   * fields: triples (directory relative to the table, its path, parameters as
   * "key=value/key=value") in the Fields encoding. Returns a Scala Seq of
   * CatalogTablePartition for the external catalog's createPartitions / alterPartitions.
   */
  public static Object build(CatalogStorageFormat storage, String fields) throws Exception {
    List<String> f = Fields.parse(fields);
    List<CatalogTablePartition> out = new ArrayList<>();
    for (int i = 0; i + 2 < f.size(); i += 3) {
      CatalogStorageFormat at = atLocation(storage, f.get(i + 1));
      out.add(new CatalogTablePartition(
          PartitioningUtils.parsePathFragment(f.get(i)), at,
          PartitioningUtils.parsePathFragment(f.get(i + 2)), System.currentTimeMillis(), -1L,
          Option.<CatalogStatistics>empty()));
    }
    // by reflection: toSeq returns scala.collection.Seq on Scala 2.12 (Spark 3.5) and
    // scala.collection.immutable.Seq on 2.13 (Spark 4), so a direct call compiled against
    // one is a NoSuchMethodError on the other, and the jar ships compiled once
    return PythonUtils.class.getMethod("toSeq", List.class).invoke(null, out);
  }

  /** storage.copy(locationUri = path): by reflection, as the record's fields differ between
   * Spark versions (4.x added one); the others keep their values. */
  private static CatalogStorageFormat atLocation(CatalogStorageFormat storage, String path)
      throws Exception {
    Method copy = null;
    for (Method m : CatalogStorageFormat.class.getMethods()) {
      if (m.getName().equals("copy")) {
        copy = m;
      }
    }
    Object[] args = new Object[copy.getParameterCount()];
    for (int k = 0; k < args.length; k++) {
      args[k] = CatalogStorageFormat.class.getMethod("copy$default$" + (k + 1)).invoke(storage);
    }
    args[0] = Option.apply(CatalogUtils.stringToURI(path));
    return (CatalogStorageFormat) copy.invoke(storage, args);
  }
}
