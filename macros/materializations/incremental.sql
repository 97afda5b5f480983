{#-- dbt's own `incremental` on a sized_spark profile: Parquet SQL models (file_format unset
     or parquet) are written by the sized engine, with dbt's strategy names (append ->
     insert, merge / delete+insert -> upsert, insert_overwrite, microbatch); every other
     model (other file formats, Python models, `sized: false`, a profile whose method is
     not session) gets dbt-spark's incremental unchanged. --#}
{% materialization incremental, adapter='sized_spark', supported_languages=['sql', 'python'] %}
  {%- if sized_takes_model() -%}
    {{ return(sized_materialize()) }}
  {%- endif -%}
  {{ return(materialization_incremental_spark()) }}
{% endmaterialization %}
