{#-- dbt's own `incremental` on a sized_spark profile: Parquet SQL and Python models
     (file_format unset or parquet) are written by the sized engine, with dbt's strategy
     names (append -> insert, merge / delete+insert -> upsert, insert_overwrite, microbatch
     for SQL); every other model (other file formats, `sized: false`, a profile whose method
     is thrift, http or odbc) gets dbt-spark's incremental unchanged. --#}
{% materialization incremental, adapter='sized_spark', supported_languages=['sql', 'python'] %}
  {%- if sized_takes_model() -%}
    {{ return(sized_materialize()) }}
  {%- endif -%}
  {%- if model.language != 'python' -%}
    {{ return(materialization_incremental_spark()) }}
  {%- endif -%}
  {#-- a Python model dbt-spark submits: its statements in this body (dbt_spark_python.sql) --#}
  {%- set plan = sized_dbt_spark_python_incremental_begin() -%}
  {%- if plan.build -%}
    {%- call statement('main', language='python') -%}
      {{ create_table_as(False, plan.target, compiled_code, 'python') }}
    {%- endcall -%}
    {%- do persist_constraints(plan.target, model) -%}
  {%- else -%}
    {%- call statement('create_tmp_relation', language='python') -%}
      {{ create_table_as(True, plan.tmp, compiled_code, 'python') }}
    {%- endcall -%}
    {%- do sized_dbt_spark_python_incremental_merge(plan) -%}
  {%- endif -%}
  {{ return(sized_dbt_spark_python_end(plan)) }}
{% endmaterialization %}
