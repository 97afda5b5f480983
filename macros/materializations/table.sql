{#-- dbt's own `table` on a sized_spark profile: Parquet SQL models are written by the sized
     engine as a full build (every run replaces the table, as one instant); other models
     get dbt-spark's table unchanged (see incremental.sql for which). --#}
{% materialization table, adapter='sized_spark', supported_languages=['sql', 'python'] %}
  {%- if sized_takes_model() -%}
    {{ return(sized_materialize(always_full=true)) }}
  {%- endif -%}
  {{ return(materialization_table_spark()) }}
{% endmaterialization %}
