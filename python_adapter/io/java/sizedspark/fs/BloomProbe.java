package sizedspark.fs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.column.values.bloomfilter.BlockSplitBloomFilter;
import org.apache.parquet.column.values.bloomfilter.BloomFilter;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;
import org.apache.spark.sql.Row;

/**
 * Which files may hold some of a batch's keys, by the Parquet Bloom filters of their key
 * column (python_adapter/spark/bloom.py): Hudi's bloom index on plain Parquet.
 *
 * Files come as fields "<path>", "<group>"; keys as Rows (group int, key). A file is probed
 * with the keys of its group only (an upsert's first pass: the keys of the file's own
 * partition), a file of group -1 with every key. The answer holds one character per file, in
 * order: '0' when every row group's filter rules all of its keys out, '1' when a filter may
 * hold one, '2' when the file's filters cannot tell (no Bloom filter, no such column, a key
 * type that is not hashed here).
 */
public final class BloomProbe {
  // Parquet's Bloom filters all hash with XXH64 of the value's plain encoding.
  private static final BloomFilter HASHER = new BlockSplitBloomFilter(32);
  private static final int ANY = -1;  // the group of files probed with every key

  private BloomProbe() {}

  public static String probe(Configuration conf, String filesText, String keyColumn,
                             List<Row> keys) {
    List<String> fields = Fields.parse(filesText);
    // Deduplicated here: a Spark distinct() would cost a shuffle job (~0.4 s) per probe.
    Map<Integer, Set<Object>> byGroup = new HashMap<>();
    for (Row row : keys) {
      if (!row.isNullAt(1)) {
        byGroup.computeIfAbsent(row.getInt(0), g -> new HashSet<>()).add(row.get(1));
      }
    }
    Map<Integer, Hashes> hashes = new HashMap<>();
    byGroup.forEach((group, values) -> hashes.put(group, new Hashes(new ArrayList<>(values))));
    Set<Object> all = new HashSet<>();
    byGroup.values().forEach(all::addAll);
    hashes.put(ANY, new Hashes(new ArrayList<>(all)));
    try {
      return IntStream.range(0, fields.size() / 2).parallel()
          .mapToObj(i -> {
            Hashes h = hashes.get(Integer.parseInt(fields.get(2 * i + 1)));
            return h == null ? "0" : answer(conf, fields.get(2 * i), keyColumn, h);
          })
          .collect(Collectors.joining());
    } catch (UncheckedIOException e) {
      throw new UncheckedIOException(e.getCause());
    }
  }

  private static String answer(Configuration conf, String path, String keyColumn,
                               Hashes hashes) {
    try (ParquetFileReader reader = ParquetFileReader.open(
        HadoopInputFile.fromPath(new Path(path), conf))) {
      for (BlockMetaData block : reader.getFooter().getBlocks()) {
        if (block.getRowCount() == 0) {
          continue;
        }
        ColumnChunkMetaData chunk = chunkOf(block.getColumns(), keyColumn);
        long[] wanted = chunk == null ? null : hashes.of(chunk.getPrimitiveType().getPrimitiveTypeName());
        BloomFilter filter = wanted == null ? null : reader.readBloomFilter(chunk);
        if (filter == null) {
          return "2";  // this row group's filter cannot tell
        }
        for (long hash : wanted) {
          if (filter.findHash(hash)) {
            return "1";
          }
        }
      }
      return "0";
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static ColumnChunkMetaData chunkOf(List<ColumnChunkMetaData> chunks, String name) {
    ColumnChunkMetaData found = null;
    for (ColumnChunkMetaData chunk : chunks) {  // Spark matches names case-insensitively
      String[] path = chunk.getPath().toArray();
      if (path.length == 1 && (path[0].equals(name)
          || (found == null && path[0].equalsIgnoreCase(name)))) {
        found = chunk;
      }
    }
    return found;
  }

  /** The keys' hashes per physical type, computed once for all files of the group. */
  private static final class Hashes {
    private final List<Object> values;
    private final Map<PrimitiveTypeName, long[]> byType = new HashMap<>();

    Hashes(List<Object> values) {
      this.values = values;
    }

    /** null when some key cannot be hashed as this type (the filter cannot tell). */
    synchronized long[] of(PrimitiveTypeName type) {
      if (!byType.containsKey(type)) {
        byType.put(type, compute(type));
      }
      return byType.get(type);
    }

    private long[] compute(PrimitiveTypeName type) {
      long[] out = new long[values.size()];
      for (int i = 0; i < out.length; i++) {
        Object v = values.get(i);
        if (type == PrimitiveTypeName.INT64 && v instanceof Number && !(v instanceof Float)
            && !(v instanceof Double) && !(v instanceof java.math.BigDecimal)) {
          out[i] = HASHER.hash(((Number) v).longValue());
        } else if (type == PrimitiveTypeName.INT32 && (v instanceof Integer || v instanceof Short
            || v instanceof Byte)) {
          out[i] = HASHER.hash(((Number) v).intValue());
        } else if (type == PrimitiveTypeName.BINARY && v instanceof String) {
          out[i] = HASHER.hash(Binary.fromString((String) v));
        } else {
          return null;
        }
      }
      return out;
    }
  }
}
