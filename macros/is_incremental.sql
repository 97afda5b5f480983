{#-- dbt's is_incremental() is true only for materialized='incremental'; sized_incremental
     models filter their new data with it too. Adapter macros take precedence over dbt's. --#}
{% macro is_incremental() %}
  {% if not execute %}
    {{ return(False) }}
  {% else %}
    {% set relation = adapter.get_relation(this.database, this.schema, this.table) %}
    {{ return(relation is not none
              and relation.type == 'table'
              and model.config.materialized in ('incremental', 'sized_incremental')
              and not should_full_refresh()) }}
  {% endif %}
{% endmacro %}
