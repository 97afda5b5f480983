package sizedspark.fs;

/** Text fields for Python: "<length in code points>:<text>", so any text is safe. */
final class Fields {
  private Fields() {}

  static void add(StringBuilder out, String text) {
    out.append(text.codePointCount(0, text.length())).append(':').append(text);
  }
}
