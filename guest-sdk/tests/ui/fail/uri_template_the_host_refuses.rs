use paddock_sdk::{UriVars, resource_template};

/// Thirty-three variables: one more than a template may have.
#[resource_template(uri_template = "x://{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}/{i}/{j}/{k}/{l}/{m}/{n}/{o}/{p}/{q}/{r}/{s}/{t}/{u}/{v}/{w}/{x}/{y}/{z}/{aa}/{ab}/{ac}/{ad}/{ae}/{af}/{ag}")]
fn many(vars: UriVars) -> String {
    vars.get("a").unwrap_or_default().to_owned()
}

fn main() {}
