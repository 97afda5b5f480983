{#-- persist_docs on Parquet tables (sized_incremental's, and dbt-spark's table, seed and
     incremental on Parquet): the model's description as the table comment and the
     columns' descriptions as column comments, written after every build, so a full refresh
     that defines the table again and a schema change keep them. dbt-spark writes column
     comments for Delta, Hudi and Iceberg only; views and other formats keep its
     behaviour. Spark cannot alter a partition column's comment
     (CANNOT_ALTER_PARTITION_COLUMN): those are left out, and the log says so. The Hive
     metastore keeps a column comment in VARCHAR(256) (COLUMNS_V2.COMMENT): a longer one
     fails the ALTER after the metastore client's retries (27 s here), so it is cut to 256
     characters, with a warning. --#}
{% macro sized_spark__persist_docs(relation, model, for_relation, for_columns) -%}
  {#-- dbt-spark's incremental passes `this`, whose type is not set --#}
  {%- if relation.is_view or config.get('materialized') == 'view'
         or config.get('file_format', 'parquet') != 'parquet' -%}
    {{ return(spark__persist_docs(relation, model, for_relation, for_columns)) }}
  {%- endif -%}
  {%- if for_relation and config.persist_relation_docs() and model.description -%}
    {%- do run_query("alter table " ~ relation ~ " set tblproperties ('comment' = "
                     ~ sized_sql_string(model.description) ~ ")") -%}
  {%- endif -%}
  {%- if for_columns and config.persist_column_docs() and model.columns -%}
    {%- set existing = adapter.get_columns_in_relation(relation) | map(attribute='name') | list -%}
    {%- set documented = validate_doc_columns(relation, model.columns, existing) -%}
    {%- set partition_by = config.get('partition_by') or [] -%}
    {%- set partition_by = ([partition_by] if partition_by is string else partition_by)
                           | map('lower') | list -%}
    {%- set skipped = [] -%}
    {%- set truncated = [] -%}
    {%- for name in documented if documented[name]['description'] -%}
      {%- set text = documented[name]['description'] -%}
      {%- if name | lower in partition_by -%}
        {%- do skipped.append(name) -%}
      {%- else -%}
        {%- if text | length > 256 -%}
          {%- do truncated.append(name ~ ' (' ~ text | length ~ ')') -%}
        {%- endif -%}
        {%- do run_query("alter table " ~ relation ~ " alter column " ~ adapter.quote(name)
                         ~ " comment " ~ sized_sql_string(text[:256])) -%}
      {%- endif -%}
    {%- endfor -%}
    {%- if skipped -%}
      {%- do log("persist_docs: " ~ relation ~ ": Spark cannot comment partition columns of an "
                 ~ "existing table; left out: " ~ skipped | join(', '), info=true) -%}
    {%- endif -%}
    {%- if truncated -%}
      {%- do exceptions.warn("persist_docs: " ~ relation ~ ": the Hive metastore keeps at most "
                             ~ "256 characters of a column comment; cut to 256: "
                             ~ truncated | join(', ')) -%}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}

{#-- text as a Spark SQL string literal (backslashes and quotes escaped) --#}
{% macro sized_sql_string(text) -%}
  {{- return("'" ~ (text | replace('\\', '\\\\') | replace("'", "\\'")) ~ "'") -}}
{%- endmacro %}
