from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from accounts import views as accounts
from common import error_pages as errors

# No self-registration: only the login, logout and password-reset views of django.contrib.auth.
account_patterns = [
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password_change/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("password_change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("password_reset/", accounts.PasswordResetView.as_view(), name="password_reset"),
    path("password_reset/done/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path(
        "reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path("reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    path("api-token/", accounts.api_token, name="api_token"),
]

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include(account_patterns)),
    path("api/v1/", include("api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api_schema"),
    # Swagger UI with its start-up script as a file of its own (?script), as the Content-Security-Policy demands.
    path(
        "api/docs/",
        SpectacularSwaggerSplitView.as_view(url_name="api_schema", template_name="api/swagger_ui.html"),
        name="api_docs",
    ),
    path("", include("faithanno.page_urls")),
]

# The app's own error pages (JSON under /api/); with DEBUG on see common.error_pages as well.
handler400 = errors.bad_request
handler403 = errors.permission_denied
handler404 = errors.page_not_found
handler500 = errors.server_error
