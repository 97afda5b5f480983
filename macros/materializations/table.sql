{#-- dbt's own `table` on a sized_spark profile: Parquet SQL and Python models are written by
     the sized engine as a full build (every run replaces the table, as one instant); other
     models get dbt-spark's table unchanged (see incremental.sql for which). --#}
{% materialization table, adapter='sized_spark', supported_languages=['sql', 'python'] %}
  {%- if sized_takes_model() -%}
    {{ return(sized_materialize(always_full=true)) }}
  {%- endif -%}
  {%- if model.language != 'python' -%}
    {{ return(materialization_table_spark()) }}
  {%- endif -%}
  {#-- a Python model dbt-spark submits: its statement in this body (dbt_spark_python.sql) --#}
  {%- set plan = sized_dbt_spark_python_table_begin() -%}
  {%- call statement('main', language='python') -%}
    {{ create_table_as(False, plan.target, compiled_code, 'python') }}
  {%- endcall -%}
  {%- do persist_constraints(plan.target, model) -%}
  {{ return(sized_dbt_spark_python_end(plan)) }}
{% endmaterialization %}
