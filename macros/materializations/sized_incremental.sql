{#-- sized_incremental: the model's SQL is planned and written by the adapter in files of
     target_file_size; the steps are sized_materialize's, shared with dbt's own
     incremental and table on this adapter. --#}
{% materialization sized_incremental, adapter='sized_spark', supported_languages=['sql'] %}
  {{ return(sized_materialize()) }}
{% endmaterialization %}
