package sizedspark.fs;

import java.util.ArrayList;
import java.util.List;

/** Text fields between Python and Java: "<length in code points>:<text>", so any text is
 * safe. */
final class Fields {
  private Fields() {}

  static void add(StringBuilder out, String text) {
    out.append(text.codePointCount(0, text.length())).append(':').append(text);
  }

  static List<String> parse(String text) {
    List<String> out = new ArrayList<>();
    int pos = 0;
    while (pos < text.length()) {
      int colon = text.indexOf(':', pos);
      int count = Integer.parseInt(text.substring(pos, colon));
      int end = text.offsetByCodePoints(colon + 1, count);
      out.add(text.substring(colon + 1, end));
      pos = end;
    }
    return out;
  }
}
