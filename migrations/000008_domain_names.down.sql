DROP TABLE IF EXISTS base_path_mappings;
DROP TABLE IF EXISTS domain_names;
