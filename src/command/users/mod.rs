//! The user commands (create, change, drop, `usersInfo`) and the Cosmos account user.

mod account;
mod info;
mod manage;

pub use account::ensure_account;
pub use info::users_info;
pub use manage::{change_roles, create_user, drop_all_users, drop_user, update_user};
