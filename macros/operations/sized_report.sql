{#-- dbt run-operation sized_report --args '{relation: schema.table, path: /tmp/events.html}'
     Writes a self-contained HTML report: file size histogram per partition, small files over
     time from the timeline, clustering state. The path may be local or a file://, hdfs://,
     s3a:// URI (written through the session's Hadoop FileSystem). --#}
{% macro sized_report(relation, path) %}
  {%- set rel = sized_resolve_relation(relation) -%}
  {%- set result = adapter.sized_report(rel, path) -%}
  {{ print(result.message) }}
  {{ return(result.path) }}
{% endmacro %}
