-- Custom domain names and base path mappings (docs/behaviour.md, "Custom
-- domain names"): AWS's REGIONAL DomainName and BasePathMapping.
--
-- A domain name is served either with a certificate stored here
-- (certificate_body, certificate_chain, certificate_private_key: PEM; the
-- key sealed with TOLLGATE_SECRETS_KEY when the admin has one, see package
-- seal) or with the certificate the gateway nodes' own configuration maps
-- regional_certificate_arn to; never both.
CREATE TABLE domain_names (
    domain_name               text        PRIMARY KEY,
    certificate_name          text        NOT NULL DEFAULT '',
    regional_certificate_name text        NOT NULL DEFAULT '',
    regional_certificate_arn  text        NOT NULL DEFAULT '',
    certificate_body          text        NOT NULL DEFAULT '',
    certificate_chain         text        NOT NULL DEFAULT '',
    certificate_private_key   text        NOT NULL DEFAULT '',
    certificate_uploaded_at   timestamptz,
    security_policy           text        NOT NULL DEFAULT 'TLS_1_2' CHECK (security_policy = 'TLS_1_2'),
    tags                      jsonb       NOT NULL DEFAULT '{}',
    created_at                timestamptz NOT NULL,
    CONSTRAINT domain_names_certificate_check CHECK (
        (certificate_body <> '' AND certificate_private_key <> '' AND regional_certificate_arn = '')
        OR (certificate_body = '' AND certificate_chain = '' AND certificate_private_key = ''
            AND regional_certificate_arn <> ''))
);

-- A mapping routes https://<domain_name>/<base_path>/... to a stage of an
-- API. base_path is AWS's: '(none)' for the empty path, else segments
-- joined by '/'. stage is NULL when callers name the stage in the path.
-- A mapped API or stage cannot be deleted before its mappings (RESTRICT);
-- deleting the domain name deletes them.
CREATE TABLE base_path_mappings (
    domain_name text NOT NULL REFERENCES domain_names (domain_name) ON DELETE CASCADE,
    base_path   text NOT NULL,
    api_id      text NOT NULL,
    stage       text,
    created_at  timestamptz NOT NULL,
    CONSTRAINT base_path_mappings_pkey PRIMARY KEY (domain_name, base_path),
    CONSTRAINT base_path_mappings_api_fkey FOREIGN KEY (api_id)
        REFERENCES rest_apis (id) ON DELETE RESTRICT,
    CONSTRAINT base_path_mappings_stage_fkey FOREIGN KEY (api_id, stage)
        REFERENCES stages (api_id, name) ON DELETE RESTRICT
);
CREATE INDEX base_path_mappings_api_idx ON base_path_mappings (api_id, stage);
